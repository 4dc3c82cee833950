/* Tessera compile driver: from HLO text to the per-device program, as a
 * table of stages that `tessera opt`, `check` and `run` walk as far as they
 * need (DESIGN.md's data flow). */
#ifndef TS_PIPELINE_H
#define TS_PIPELINE_H

#include "ts_common.h"
#include "ts_hlo.h"
#include "ts_partitioner.h"
#include "ts_runtime.h"
#include "ts_scheduler.h"

/* The stages, in table order. They form a tree, not a line: each runs on
 * the result of its `after` stage (propagated and partitioned both follow
 * verified; the partitioner propagates shardings itself). */
typedef enum {
  TS_STAGE_PARSED,      /* the text parsed into a module, unverified */
  TS_STAGE_VERIFIED,    /* structure and shapes verified */
  TS_STAGE_PROPAGATED,  /* every instruction given a sharding */
  TS_STAGE_PARTITIONED, /* the per-device program (pm) */
  TS_STAGE_SCHEDULED,   /* collectives async, computations ordered (is_scheduled=true) */
  TS_STAGE_ASSIGNED,    /* buffers assigned: the executable program (prog) */
  TS_STAGE_FUSED,       /* the verified module (m) with loop and input fusions, in place */
  TS_STAGE_COUNT,
} ts_stage_t;

/* Whom a pipeline serves: it decides how a failed verification after a
 * stage counts (pipeline.c's verdict table) and so the exit code. */
typedef enum {
  TS_PIPELINE_PRINT, /* tessera opt: print a stage */
  TS_PIPELINE_CHECK, /* tessera check: a partitioned module that does not verify is a failed check */
  TS_PIPELINE_RUN,   /* tessera run: ... is a partitioner bug */
  TS_PIPELINE_PURPOSE_COUNT,
} ts_pipeline_purpose_t;

typedef struct {
  ts_pipeline_purpose_t purpose;
  const char *path;              /* the module's file; "-": stdin */
  ts_hlo_verify_opts_t verify;   /* verified, propagated: the flags' overrides */
  ts_partition_opts_t partition; /* partitioned: num_partitions is the caller's to set first */
  ts_sched_opts_t sched;         /* scheduled: .cost is the caller's (it outlives the stage) */
  ts_rt_program_opts_t program;  /* assigned; its replica_count also verifies the partitioned module */
  /* partitioned: first compile the whole module, so that an op nothing can
   * run (a custom-call target with no defined meaning) is the error
   * reported, not whatever the partitioner makes of it. */
  bool runnable_first;
} ts_pipeline_opts_t;

/* One compilation. Callers read the results; the pipeline owns them. */
typedef struct {
  ts_pipeline_opts_t o;
  ts_text_t text;          /* the module's text: backs its diagnostics */
  ts_hlo_module_t *m;      /* as written (propagation writes shardings into it) */
  ts_hlo_module_t *pm;     /* the per-device program: m itself when partitioning was skipped */
  ts_sched_result_t *sched; /* the scheduler's statistics; NULL unless scheduled */
  ts_rt_program_t *prog;   /* NULL unless assigned */
  unsigned done;           /* bit s: stage s ran or was skipped */
  /* Wall seconds (CLOCK_MONOTONIC) stage s took to run, and the verification
   * after it; the process CPU seconds of the two (what a loaded host barely
   * moves); 0 for a stage skipped or not reached. For bench_compile. */
  double run_s[TS_STAGE_COUNT], verify_s[TS_STAGE_COUNT], run_cpu_s[TS_STAGE_COUNT], verify_cpu_s[TS_STAGE_COUNT];
} ts_pipeline_t;

typedef struct {
  const char *name;    /* what --stage= takes */
  const char *doc;     /* one clause for --help */
  ts_stage_t after;    /* the stage it runs on (itself for the first) */
  bool prints;         /* its result is HLO text (tessera opt can print it) */
  ts_status_t (*run)(ts_pipeline_t *p, ts_diag_t *diag);
} ts_stage_info_t;

extern const ts_stage_info_t ts_pipeline_stages[TS_STAGE_COUNT];

/* The stage named `name`, or false. */
bool ts_pipeline_stage_from_name(const char *name, ts_stage_t *out);

void ts_pipeline_init(ts_pipeline_t *p, const ts_pipeline_opts_t *o);
/* Runs every stage on the way to `s` that has not run yet, each followed by
 * the verification its verdict asks for (in debug builds the verifier runs
 * after every stage but parsed). The first failure stops it; messages for
 * the user go to diag. Stages may be reached one call at a time, and the
 * caller may change p->o between calls (for the next stages). */
ts_status_t ts_pipeline_run_to(ts_pipeline_t *p, ts_stage_t s, ts_diag_t *diag);
/* Marks stage `s` done without running it: partitioned skipped means the
 * module already is the per-device program (pm = m); scheduled skipped
 * keeps the module's order. Its `after` stage must be done. */
void ts_pipeline_skip(ts_pipeline_t *p, ts_stage_t s);
/* Whether the module was partitioned (pm is a new module). */
bool ts_pipeline_partitioned(const ts_pipeline_t *p);
/* Frees the input module and its text once the partitioned module is all a
 * caller needs (a compile that reports on the per-device program): at a
 * million instructions that is a third of the compile's memory. No-op
 * unless partitioned; the input stages cannot run again afterwards. */
void ts_pipeline_release_input(ts_pipeline_t *p);
void ts_pipeline_fini(ts_pipeline_t *p); /* frees everything; a zeroed pipeline is fine */

/* The process exit code of a pipeline's (or a command's) status: 0 ok,
 * 1 a check ran and failed, 2 bad input or usage (parse and verify errors),
 * 3 cannot run here (unsupported, too large), 4 a runtime, system or peer
 * failure, or our own bug. */
int ts_pipeline_exit_code(ts_status_t st);

#endif
