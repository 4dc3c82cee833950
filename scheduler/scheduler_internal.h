/* Shared inside scheduler/: what the passes know about each instruction and
 * computation while scheduling a module. Not part of the public API. */
#ifndef TS_SCHEDULER_INTERNAL_H
#define TS_SCHEDULER_INTERNAL_H

#include "ts_scheduler.h"

#define NO_KIND (-1)

/* Per instruction, indexed by instruction id. */
typedef struct {
  double cost;              /* seconds the compute stream is busy (0 for async start/done) */
  double latency;           /* async start: the collective's time (the start->done edge) */
  int kind;                 /* async start/done: its ts_coll_kind_t; else NO_KIND */
  ts_hlo_instr_t *partner;  /* async start <-> done */
  uint64_t bytes;           /* bytes of the buffer it defines (0: aliases its operands) */
  bool alias;               /* defines no buffer: refers to its operands' (gte, tuple, done, ...) */
  bool nop;                 /* free and scheduled first when ready (XLA's nop set) */
  unsigned uses_kinds;      /* bit per kind: async collectives inside its called computations */
  int uses_count[TS_SCHED_KIND_COUNT]; /* most of each kind in flight at once inside them */
  uint64_t callee_peak;     /* bytes its called computations hold live at their peak */
  double trips;             /* while: iterations per execution (1 when unknown) */
  double serial;            /* while/call/conditional: its callees' program-order time */
  const char *source;       /* cost source of a collective */
} sched_node_t;

/* Per computation, indexed by its position in the module. */
typedef struct {
  double time;          /* one execution, top-down replay of the schedule */
  uint64_t peak;        /* largest live set, its parameters excluded */
  unsigned kinds;       /* async kinds used inside, transitively */
  int inflight[TS_SCHED_KIND_COUNT]; /* most async pairs of each kind open at once, nested ones too */
  double serial;        /* one execution in program order, collectives synchronous */
  uint64_t base_peak;   /* largest live set in program order */
  bool fell_back;       /* kept program order: no schedule stayed within its peak */
  int reruns;           /* memory-pressure reschedules it took */
  bool done;
} sched_comp_t;

typedef struct {
  ts_hlo_module_t *m;
  const ts_sched_opts_t *o;
  const ts_costmodel_t *cm;   /* may be NULL */
  ts_roofline_t roof;
  int64_t slice;              /* devices per slice; 0: one slice */
  int64_t ndevices;           /* replica_count * num_partitions */
  sched_node_t *node;         /* [m->next_id] */
  sched_comp_t *comp;         /* [m->ncomps] */
  double *tstart;             /* [m->next_id]: replay time of each async start */
  bool *is_body;              /* [m->ncomps]: a while loop's body */
  ts_diag_t *diag;
} sched_ctx_t;

/* cost.c */
int ts_sched_kind_of(const ts_hlo_instr_t *i);          /* collective opcode (sync or start) -> kind */
bool ts_sched_is_async_start(const ts_hlo_instr_t *i);
bool ts_sched_is_async_done(const ts_hlo_instr_t *i);
/* Fills node[i->id] for every instruction of c except the costs of
 * while/call/conditional, which need their callees (lhs.c adds them). */
ts_status_t ts_sched_cost_comp(sched_ctx_t *x, ts_hlo_comp_t *c);
/* Iterations of a while loop: backend_config known_trip_count, else the
 * `i < C` counter pattern from a constant start, else 1 (*known false). */
double ts_sched_while_trips(const ts_hlo_instr_t *w, bool *known);

/* lhs.c: orders c->instrs (bottom-up list scheduling) and fills comp[...]. */
ts_status_t ts_sched_comp(sched_ctx_t *x, ts_hlo_comp_t *c, int index);

/* stats.c: top-down replay of c's order: time, pairs, events (entry only). */
typedef struct {
  ts_sched_pair_t *pairs;
  int npairs, pairs_cap;
  ts_sched_event_t *events;
  int nevents, events_cap;
  double compute;  /* op costs times executions, callers (while, call) excluded */
} sched_log_t;
ts_status_t ts_sched_replay(sched_ctx_t *x, const ts_hlo_comp_t *c, double *time, sched_log_t *log,
                            double executions, bool events, double t0, int depth);

#endif
