/* Tessera scheduler: turns synchronous collectives into start/done pairs and
 * orders every computation with a list scheduler in the style of XLA's
 * latency-hiding scheduler (shared/reference/cost_models.md section 5), so
 * that collectives overlap independent compute. Costs come from costmodel/
 * (tables, the S-curve model, the roofline). Times are in seconds. */
#ifndef TS_SCHEDULER_H
#define TS_SCHEDULER_H

#include "ts_common.h"
#include "ts_costmodel.h"
#include "ts_hlo.h"

/* The resources of the overlap limits: one per collective kind, as XLA's
 * ResourceType: the first TS_SCHED_KIND_COUNT kinds of ts_coll_kind_t
 * (ts_collective.h), all-reduce to collective-broadcast. */
#define TS_SCHED_KIND_COUNT (TS_COLL_COLLECTIVE_BROADCAST + 1)

typedef struct {
  /* Async pairs of one kind in flight at once (XLA's *_overlap_limit);
   * default 1 each. */
  int overlap_limit[TS_SCHED_KIND_COUNT];
  /* Bytes live at once (per device); 0: none given (then see
   * keep_program_peak). When the schedule would
   * exceed it the scheduler prefers ops that free memory and shortens async
   * windows, then re-schedules with a 10% lower target up to `reruns`
   * times (XLA's rerun), keeping the schedule with the lowest peak. */
  uint64_t memory_limit;
  int reruns; /* default 5 */
  /* With no memory_limit: never above program order's peak (default true).
   * Each computation is scheduled under the live peak and buffer arena of
   * its own input order (the collectives' operands live until their dones);
   * when no schedule stays within them, it keeps that order with each async
   * window widened as far as they allow. False: no memory target at all. */
  bool keep_program_peak;
  /* Where costs come from; NULL: the host's roofline alone. Not owned. */
  const ts_costmodel_t *cost;
  /* Convert synchronous collectives into start/done pairs first (default
   * true); when false only existing async pairs overlap anything. */
  bool convert_async;
} ts_sched_opts_t;

void ts_sched_opts_default(ts_sched_opts_t *o);

/* --overlap-limit's value: "N" (every kind) or "KIND=N,..." (KIND as
 * ts_coll_kind_name). Sets o->overlap_limit and returns true, or returns
 * false and changes nothing. ts_sched_overlap_limit_syntax says what it
 * takes, for usage errors. */
bool ts_sched_parse_overlap_limit(const char *s, ts_sched_opts_t *o);
extern const char ts_sched_overlap_limit_syntax[];

/* Per async pair, in schedule order (computations in module order). */
typedef struct {
  const char *start, *done;   /* instruction names (module arena) */
  const char *computation;
  ts_coll_kind_t kind;
  double latency_s;           /* the collective's predicted time */
  double wasted_s;            /* latency not hidden behind compute, per execution */
  double hidden_s;            /* latency_s - wasted_s: the compute it overlaps */
  double executions;          /* times it runs per step (while trip counts) */
  const char *source;         /* the cost source: "table", "analytical", "roofline" */
} ts_sched_pair_t;

/* One event of the predicted timeline of the entry computation (a while or
 * call is one event; the trace shows its callee as a nested span). */
typedef struct {
  const char *name;
  const char *op;             /* opcode name */
  int lane;                   /* 0: compute; 1 + kind: that collective kind */
  double start_s, dur_s;
  int depth;                  /* nesting: 0 entry, 1 inside a while body, ... */
} ts_sched_event_t;

typedef struct {
  double step_time_s;         /* predicted time of the entry computation */
  double compute_s;           /* sum of op costs (async starts and dones excluded) */
  double collective_s;        /* sum of async-pair latencies, times their executions */
  double wasted_s;            /* sum of exposed collective time, times executions */
  double wasted_by_kind_s[TS_SCHED_KIND_COUNT];
  double overlap;             /* 1 - wasted / collective (1 when there is no collective) */
  uint64_t peak_memory_bytes; /* entry parameters + the largest live set */
  double program_order_step_s;      /* the step in program order, collectives synchronous */
  uint64_t program_order_peak_bytes; /* entry parameters + program order's largest live set */
  int kept_program_order;     /* computations left in program order to stay within its peak */
  uint64_t memory_limit;      /* as asked (0: none) */
  int reruns_used;
  int converted;              /* collectives turned into async pairs */
  int computations;           /* computations scheduled */
  int instructions;
  double schedule_wall_s;     /* time the pass took */
  int npairs;
  ts_sched_pair_t *pairs;
  int nevents;
  ts_sched_event_t *events;
} ts_sched_result_t;

/* Converts the synchronous collectives of every computation into XLA's
 * async forms: all-reduce-start/-done, all-gather-start/-done,
 * collective-permute-start/-done, and async-start/async-done calling a new
 * computation that holds the collective (reduce-scatter, all-to-all,
 * collective-broadcast). Uses are rewired to the done. `*converted` (may be
 * NULL) gets the count. */
ts_status_t ts_sched_convert_async(ts_hlo_module_t *m, int *converted, ts_diag_t *diag);

/* Schedules a verified module in place: async conversion (opts->convert_async),
 * then every computation's instructions in schedule order, and the header's
 * is_scheduled=true. The module verifies afterwards. *out (may be NULL) gets
 * the statistics; free with ts_sched_result_destroy. opts may be NULL. */
ts_status_t ts_schedule(ts_hlo_module_t *m, const ts_sched_opts_t *opts, ts_sched_result_t **out,
                        ts_diag_t *diag);
void ts_sched_result_destroy(ts_sched_result_t *r); /* NULL is a no-op */

/* The statistics as text, in the spirit of XLA's LatencyHidingStatistics
 * ("Total wasted cycles", per kind, "Total cycles", "Memory pressure peak"),
 * in microseconds, then one line per async pair. */
void ts_sched_result_print(const ts_sched_result_t *r, ts_buf_t *out);

/* The predicted timeline of the entry computation as a Chrome trace
 * (chrome://tracing, Perfetto): one complete event per instruction on the
 * compute lane, one per collective (start to the end of its transfer) on
 * its kind's lane. */
ts_status_t ts_sched_trace_json(const ts_sched_result_t *r, ts_buf_t *out);

#endif
