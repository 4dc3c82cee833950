/* Tessera runtime: executes the per-device program (partitioned, and
 * scheduled when the module says is_scheduled=true) on one device, with
 * buffers assigned from liveness, the kernels of kernels/ (no per-op
 * allocation), collectives over collectives/ (asynchronous
 * start/done pairs overlap compute), and progress reports for the hang
 * detector.
 *
 * Two objects. A program is compiled once per process from a verified
 * per-device module: instruction order, buffer assignment, constants,
 * aliasing; it is immutable and shared by every device of the process. A
 * device is one rank's executor: its buffers, its communicators (sub-
 * communicators of the world for every replica group the program uses), its
 * kernel context. In-process runs drive one device per thread; under mpirun
 * each process drives one. */
#ifndef TS_RUNTIME_H
#define TS_RUNTIME_H

#include "ts_coll.h"
#include "ts_common.h"
#include "ts_hang_progress.h"
#include "ts_hlo.h"
#include "ts_kernels.h"

#include <stdio.h>

/* ---- programs -------------------------------------------------------------- */

typedef struct ts_rt_program ts_rt_program_t;

typedef struct {
  int64_t replica_count;  /* 0: the module's */
  int64_t num_partitions; /* 0: the module's */
  /* Compiled kernels for fusions (codegen/'s ts_codegen_kernel): the kernel
   * that computes a fusion instruction in one step, or NULL to run its
   * computation instruction by instruction on kernels/. NULL: none. */
  ts_kernel_fn (*fusion_kernel)(void *state, const ts_hlo_instr_t *fusion);
  void *fusion_state;
} ts_rt_program_opts_t;

/* Compiles a verified per-device module (its shapes are the shard shapes;
 * collectives written out). The module must outlive the program. Errors
 * (an opcode with no kernel, a custom-call target with no defined meaning)
 * name the instruction. opts may be NULL. */
ts_status_t ts_rt_program_create(const ts_hlo_module_t *m, const ts_rt_program_opts_t *opts,
                                 ts_rt_program_t **out, ts_diag_t *diag);
void ts_rt_program_destroy(ts_rt_program_t *p); /* NULL is a no-op */
/* The errors ts_rt_program_create would give, found by lowering every
 * instruction that can run, without assigning buffers (a module about to be
 * partitioned: its own errors before the partitioner's). */
ts_status_t ts_rt_program_check(const ts_hlo_module_t *m, const ts_rt_program_opts_t *opts, ts_diag_t *diag);

/* The entry's inputs and outputs as flat lists of array leaves: input leaf i
 * is a leaf of some entry parameter (parameters in order, tuples flattened);
 * output leaf k is leaf k of the flattened root. */
int ts_rt_program_ninputs(const ts_rt_program_t *p);
int ts_rt_program_noutputs(const ts_rt_program_t *p);
/* The shape of input leaf i / output leaf k (array shapes; module arena). */
const ts_shape_t *ts_rt_program_input_shape(const ts_rt_program_t *p, int i);
const ts_shape_t *ts_rt_program_output_shape(const ts_rt_program_t *p, int k);
/* The entry parameter number input leaf i belongs to. */
int ts_rt_program_input_param(const ts_rt_program_t *p, int i);
/* The input leaf output leaf k updates (input_output_alias), -1 if none. */
int ts_rt_program_output_alias(const ts_rt_program_t *p, int k);

/* What buffer assignment found, per device, in bytes. */
typedef struct {
  uint64_t inputs;     /* entry parameters */
  uint64_t outputs;    /* outputs that do not alias an input */
  uint64_t temps;      /* the temporary arenas (entry and called computations) at their peak */
  uint64_t constants;  /* shared by the devices of a process */
  uint64_t peak;       /* inputs + outputs + temps: the most live at once */
  uint64_t naive;      /* every instruction's result in its own buffer: what reuse saved */
} ts_rt_memory_t;
void ts_rt_program_memory(const ts_rt_program_t *p, ts_rt_memory_t *out);

/* Instruction names, indexed as ts_hang_progress_t.instr and trace events
 * count them (every instruction of every computation, one index each). */
int ts_rt_program_ninstrs(const ts_rt_program_t *p);
const char *const *ts_rt_program_instr_names(const ts_rt_program_t *p);

/* ---- devices ---------------------------------------------------------------- */

typedef struct ts_rt_device ts_rt_device_t;

/* One event of the timeline (--trace): a kernel, or a collective from post
 * to completion. Times are CLOCK_MONOTONIC ns. */
typedef struct {
  int32_t instr;          /* index into ts_rt_program_instr_names */
  uint8_t is_collective;
  uint8_t phase;          /* always 0 (the runtime no longer composes phases; see algorithm) */
  int64_t step;
  uint64_t t_begin_ns, t_end_ns;
  /* Collectives: the algorithm the library ran ("hierarchical" for a
   * two-level one across slices, "ring", ...), "" for a local copy or when
   * unknown. Held in the event (not a pointer) so events can be copied
   * between processes as plain bytes. */
  char algorithm[24];
} ts_rt_event_t;

/* Called before every instruction of the entry computation runs (fault
 * injection: stall, slow, crash). A non-OK return stops the step with it. */
typedef ts_status_t (*ts_rt_hook_fn)(void *arg, int64_t step, int instr);

typedef struct {
  int64_t device_id;           /* global device id: replica * num_partitions + partition */
  ts_coll_comm_t *world;       /* rank device_id of replica_count * num_partitions; NULL for one device */
  /* Slices (multislice): device d is in slice d / (world size / slices).
   * > 1: a sub-communicator whose group spans slices in equal parts, each
   * contiguous in the group's order, gets the library's slice layout
   * (ts_coll_comm_set_slices), so its all-reduce, all-gather and
   * reduce-scatter run two-level ("hierarchical") as one operation. 0 or 1:
   * flat.
   *
   * An emulated slow link between slices (DCN), for benchmarks and tests:
   * TESSERA_CROSS_SLICE_DELAY_US=L[,BW_GBPS], read at device create (a
   * malformed value fails it). With slices > 1, every collective in which
   * this device talks to another slice (its group spans slices; for a
   * collective-permute, a pair it is in does) completes no earlier than
   *   begin + bytes / BW + L,  begin = max(post time, when the link finished
   *                                        this device's previous crossing bytes)
   * with L in microseconds (0 to 60e6), BW in GB/s (1e9 bytes/s; omitted: no
   * transfer term, every collective completes at post + L) and bytes the
   * operands' size, or for a hierarchical all-reduce or reduce-scatter the
   * 1/k share its cross-slice step sends (k devices per slice part). The
   * post never waits: the delay is paid where the collective is waited for
   * (the -done of an async pair, at once for a synchronous one), so a
   * collective started early hides it behind compute and program order pays
   * it in full. Keep L well under the hang detector's timeout. */
  int slices;
  ts_hang_progress_t *progress; /* NULL: no reports. The runtime fills instr_names/comms. */
  bool trace;                  /* record ts_rt_event_t's */
  ts_rt_hook_fn hook;          /* NULL: none */
  void *hook_arg;
} ts_rt_device_opts_t;

/* Creates device `opts->device_id`'s executor. Collective over the world
 * (every device creates its sub-communicators in the same order): every rank
 * calls it, each with its own id. */
ts_status_t ts_rt_device_create(const ts_rt_program_t *p, const ts_rt_device_opts_t *opts, ts_rt_device_t **out,
                                ts_diag_t *diag);
/* Frees the device's buffers and communicators (not the world). NULL: no-op. */
void ts_rt_device_destroy(ts_rt_device_t *d);

/* Input leaf i's buffer, to be filled before a run (the device owns it). An
 * aliased input holds the updated value after each run, so a training loop
 * only refills the inputs nothing aliases. */
ts_array_t *ts_rt_device_input(ts_rt_device_t *d, int i);

/* Runs the program once as step `step` (for progress and trace). The outputs
 * are valid until the next run. Errors name the instruction; a collective
 * error or a peer's abort returns TS_ERR_REMOTE / TS_ERR_TIMEOUT. */
ts_status_t ts_rt_device_run(ts_rt_device_t *d, int64_t step, ts_diag_t *diag);

/* Output leaf k of the last run (for an aliased output: the input buffer). */
const ts_array_t *ts_rt_device_output(ts_rt_device_t *d, int k);

/* The recorded trace events (oldest first) and how many; cleared by
 * ts_rt_device_trace_clear. */
const ts_rt_event_t *ts_rt_device_trace(const ts_rt_device_t *d, size_t *n);
void ts_rt_device_trace_clear(ts_rt_device_t *d);

/* Time spent in the last run (ns): kernels, waiting in collectives, and the
 * rest (the runtime's own overhead: dispatch, copies for control flow). */
typedef struct {
  uint64_t total_ns, kernel_ns, collective_ns, other_ns;
} ts_rt_step_times_t;
void ts_rt_device_step_times(const ts_rt_device_t *d, ts_rt_step_times_t *out);

/* ---- trace.c: the Chrome trace ---------------------------------------------- */

/* Appends a Chrome/Perfetto trace (JSON) to out: one process track per rank
 * with a compute and a collective thread; events[r][0..n[r]) are rank r's
 * with times relative to its start; hosts (may be NULL) name the ranks. */
ts_status_t ts_rt_trace_json(const char *const *instr_names, int nranks, const ts_rt_event_t *const *events,
                             const size_t *n, const char *const *hosts, ts_buf_t *out);

#endif
