/* The compile driver: the stages as a table, each run once, each followed
 * by the verification its purpose asks for. */
#include "ts_pipeline.h"
#include "ts_fusion.h"
#include "ts_sharding.h"

#include <string.h>
#include <time.h>

static double clock_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static ts_status_t parse(ts_pipeline_t *p, ts_diag_t *diag) {
  TS_CHECK(ts_text_load(p->o.path, &p->text, diag));
  ts_source_t src = {strcmp(p->o.path, "-") == 0 ? "<stdin>" : p->o.path, p->text.data, p->text.len};
  /* the module reads its source from p->text, which outlives it
   * (ts_pipeline_fini): a 200 MB dump is not copied a second time */
  ts_hlo_parse_opts_t po = {.borrow_text = true};
  ts_status_t st = ts_hlo_parse(&src, &po, &p->m, diag);
  if (st != TS_OK) {
    ts_hlo_module_destroy(p->m);
    p->m = NULL;
  }
  return st;
}

static ts_status_t verify(ts_pipeline_t *p, ts_diag_t *diag) { return ts_hlo_verify(p->m, &p->o.verify, diag); }

static ts_status_t propagate(ts_pipeline_t *p, ts_diag_t *diag) { return ts_sharding_propagate(p->m, NULL, diag); }

static ts_status_t partition(ts_pipeline_t *p, ts_diag_t *diag) {
  if (p->o.runnable_first) {
    ts_status_t st = ts_rt_program_check(p->m, &p->o.program, diag);
    if (st == TS_ERR_INVALID_ARGUMENT) return st;
    ts_diag_free(diag);
  }
  return ts_partition(p->m, &p->o.partition, &p->pm, diag);
}

static ts_status_t schedule(ts_pipeline_t *p, ts_diag_t *diag) {
  return ts_schedule(p->pm, &p->o.sched, &p->sched, diag);
}

static ts_status_t assign(ts_pipeline_t *p, ts_diag_t *diag) {
  return ts_rt_program_create(p->pm, &p->o.program, &p->prog, diag);
}

/* tessera run fuses the per-device program after scheduling instead
 * (launcher/run_compiled.c); this stage shows the fusions of the module as
 * written. */
static ts_status_t fuse(ts_pipeline_t *p, ts_diag_t *diag) { return ts_fusion_run(p->m, NULL, NULL, diag); }

const ts_stage_info_t ts_pipeline_stages[TS_STAGE_COUNT] = {
    [TS_STAGE_PARSED] = {"parsed", "parse only", TS_STAGE_PARSED, true, parse},
    [TS_STAGE_VERIFIED] = {"verified", "parse and verify structure and shapes", TS_STAGE_PARSED, true, verify},
    [TS_STAGE_PROPAGATED] = {"propagated", "verify, give every instruction a sharding, verify again",
                             TS_STAGE_VERIFIED, true, propagate},
    [TS_STAGE_PARTITIONED] = {"partitioned",
                              "the per-device program for --num-partitions N devices (required unless the header "
                              "has num_partitions > 1), verified",
                              TS_STAGE_VERIFIED, true, partition},
    [TS_STAGE_SCHEDULED] = {"scheduled",
                            "partitioned, then collectives made async and every computation ordered by the "
                            "latency-hiding scheduler (is_scheduled=true)",
                            TS_STAGE_PARTITIONED, true, schedule},
    [TS_STAGE_ASSIGNED] = {"assigned", "scheduled, then buffers assigned: the program tessera run executes",
                           TS_STAGE_SCHEDULED, false, assign},
    [TS_STAGE_FUSED] = {"fused", "verified, then loop and input fusions (kind=kLoop/kInput, calls=%fused_computation)",
                        TS_STAGE_VERIFIED, true, fuse},
};

/* How a module that fails to verify after a stage counts, per purpose. */
typedef enum {
  V_NONE,  /* not verified (release builds) */
  V_INPUT, /* the input's fault: the verifier's diagnostic as it is */
  V_BUG,   /* our bug (exit 4) */
} verdict_kind_t;

typedef struct {
  verdict_kind_t kind;
  const char *blame; /* V_BUG: after "does not verify" */
} verdict_t;

/* verified is itself the verification; parsed is never verified. */
static const verdict_t verdicts[TS_PIPELINE_PURPOSE_COUNT][TS_STAGE_COUNT] = {
    [TS_PIPELINE_PRINT] = {[TS_STAGE_PROPAGATED] = {V_INPUT, ""},
                           [TS_STAGE_PARTITIONED] = {V_BUG, " (a partitioner bug)"},
                           [TS_STAGE_SCHEDULED] = {V_BUG, ""},
                           [TS_STAGE_FUSED] = {V_BUG, " (a fusion bug)"}},
    [TS_PIPELINE_CHECK] = {[TS_STAGE_PARTITIONED] = {V_BUG, " (a partitioner bug)"}},
    [TS_PIPELINE_RUN] = {[TS_STAGE_PARTITIONED] = {V_BUG, " (a partitioner bug)"}},
};

/* The counts a stage's result is verified with. */
static ts_hlo_verify_opts_t verify_opts(const ts_pipeline_t *p, ts_stage_t s) {
  switch (s) {
  case TS_STAGE_PARTITIONED:
    return (ts_hlo_verify_opts_t){.replica_count = p->o.program.replica_count,
                                  .num_partitions = p->o.partition.num_partitions};
  case TS_STAGE_SCHEDULED:
  case TS_STAGE_ASSIGNED:
    return (ts_hlo_verify_opts_t){
        .replica_count = p->o.verify.replica_count,
        .num_partitions = ts_pipeline_partitioned(p) ? p->o.partition.num_partitions : p->o.verify.num_partitions};
  default: return p->o.verify;
  }
}

static ts_status_t verify_after(ts_pipeline_t *p, ts_stage_t s, ts_diag_t *diag) {
  verdict_t v = verdicts[p->o.purpose][s];
#ifndef NDEBUG
  /* Debug builds: every stage's result verifies, or it is our bug. */
  if (v.kind == V_NONE && s != TS_STAGE_PARSED && s != TS_STAGE_VERIFIED) v = (verdict_t){V_BUG, ""};
#endif
  if (v.kind == V_NONE) return TS_OK;
  ts_hlo_module_t *mod = s == TS_STAGE_PROPAGATED || s == TS_STAGE_FUSED ? p->m : p->pm;
  ts_hlo_verify_opts_t vo = verify_opts(p, s);
  if (v.kind == V_INPUT) return ts_hlo_verify(mod, &vo, diag);
  ts_diag_t vd = {0};
  ts_status_t st = ts_hlo_verify(mod, &vo, &vd);
  if (st == TS_OK) return TS_OK;
  ts_diag_plain(diag, "the %s module does not verify%s: %s", ts_pipeline_stages[s].name, v.blame,
                vd.text ? vd.text : ts_status_string(st));
  ts_diag_free(&vd);
  return TS_ERR_INTERNAL;
}

bool ts_pipeline_stage_from_name(const char *name, ts_stage_t *out) {
  for (int s = 0; s < TS_STAGE_COUNT; s++)
    if (strcmp(ts_pipeline_stages[s].name, name) == 0) {
      *out = (ts_stage_t)s;
      return true;
    }
  return false;
}

void ts_pipeline_init(ts_pipeline_t *p, const ts_pipeline_opts_t *o) {
  memset(p, 0, sizeof *p);
  p->o = *o;
}

ts_status_t ts_pipeline_run_to(ts_pipeline_t *p, ts_stage_t s, ts_diag_t *diag) {
  if (p->done & (1u << s)) return TS_OK;
  const ts_stage_info_t *info = &ts_pipeline_stages[s];
  if (info->after != s) TS_CHECK(ts_pipeline_run_to(p, info->after, diag));
  double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  ts_status_t st = info->run(p, diag);
  double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  p->run_s[s] = t1 - t0;
  p->run_cpu_s[s] = c1 - c0;
  if (st != TS_OK) return st;
  p->done |= 1u << s;
  st = verify_after(p, s, diag);
  p->verify_s[s] = clock_s(CLOCK_MONOTONIC) - t1;
  p->verify_cpu_s[s] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c1;
  return st;
}

void ts_pipeline_skip(ts_pipeline_t *p, ts_stage_t s) {
  TS_ASSERT(p->done & (1u << ts_pipeline_stages[s].after));
  if (s == TS_STAGE_PARTITIONED) p->pm = p->m;
  p->done |= 1u << s;
}

bool ts_pipeline_partitioned(const ts_pipeline_t *p) { return p->pm && p->pm != p->m; }

void ts_pipeline_release_input(ts_pipeline_t *p) {
  if (!ts_pipeline_partitioned(p)) return;
  ts_hlo_module_destroy(p->m);
  ts_text_free(&p->text);
  p->m = NULL;
}

void ts_pipeline_fini(ts_pipeline_t *p) {
  ts_rt_program_destroy(p->prog);
  ts_sched_result_destroy(p->sched);
  if (p->pm != p->m) ts_hlo_module_destroy(p->pm);
  ts_hlo_module_destroy(p->m);
  ts_text_free(&p->text);
  memset(p, 0, sizeof *p);
}

int ts_pipeline_exit_code(ts_status_t st) { return ts_status_exit_code(st); }
