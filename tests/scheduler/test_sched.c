/* Scheduler scenarios on small hand-written per-device modules, one per
 * CTest (argv[1] names it). What each asserts is stated with it; the costs
 * are the host roofline's (ts_sched_opts_t.cost NULL), whose figures the
 * comments work through by hand. */
#include "../ts_test.h"
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_scheduler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *ADD = "%add (a: f32[], b: f32[]) -> f32[] {\n"
                         "  %a = f32[] parameter(0)\n"
                         "  %b = f32[] parameter(1)\n"
                         "  ROOT %s = f32[] add(%a, %b)\n"
                         "}\n\n";

static ts_hlo_module_t *parse(const char *text) {
  ts_source_t src = {"test.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  if (ts_hlo_parse(&src, NULL, &m, &d) != TS_OK || ts_hlo_verify(m, NULL, &d) != TS_OK) {
    fprintf(stderr, "%s", d.text ? d.text : "parse failed\n");
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&d);
  return m;
}

/* Parses, schedules with `o` (NULL: defaults), verifies the result. */
static ts_hlo_module_t *schedule(const char *text, const ts_sched_opts_t *o, ts_sched_result_t **res) {
  ts_hlo_module_t *m = parse(text);
  if (!m) return NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_schedule(m, o, res, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st != TS_OK) {
    fprintf(stderr, "schedule/verify: %s\n%s", ts_status_string(st), d.text ? d.text : "");
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&d);
  return m;
}

static ts_hlo_comp_t *comp(ts_hlo_module_t *m, const char *name) {
  return name ? ts_hlo_module_find_comp(m, name) : m->entry;
}

/* Position of the instruction named `name` (or whose opcode is `name`
 * when no instruction has that name) in c's order; -1 when absent. */
static int pos(const ts_hlo_comp_t *c, const char *name) {
  for (int k = 0; k < c->ninstrs; k++)
    if (strcmp(c->instrs[k]->name, name) == 0) return k;
  for (int k = 0; k < c->ninstrs; k++)
    if (strcmp(ts_opcode_name(c->instrs[k]->op), name) == 0) return k;
  return -1;
}

static bool is_start(const ts_hlo_instr_t *i) {
  return i->op == TS_OP_ALL_REDUCE_START || i->op == TS_OP_ALL_GATHER_START ||
         i->op == TS_OP_COLLECTIVE_PERMUTE_START || i->op == TS_OP_ASYNC_START;
}
static bool is_done(const ts_hlo_instr_t *i) {
  return i->op == TS_OP_ALL_REDUCE_DONE || i->op == TS_OP_ALL_GATHER_DONE ||
         i->op == TS_OP_COLLECTIVE_PERMUTE_DONE || i->op == TS_OP_ASYNC_DONE;
}

/* The most async pairs open at once in c's order. */
static int max_in_flight(const ts_hlo_comp_t *c) {
  int open = 0, most = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    if (is_start(c->instrs[k])) open++;
    if (is_done(c->instrs[k])) open--;
    if (open > most) most = open;
  }
  return most;
}

static char *print(const ts_hlo_module_t *m) {
  ts_buf_t b = {0};
  ts_hlo_print(m, &b);
  return b.data; /* ts_free */
}

/* ---- a collective starts before independent compute, ends before its use --- */

/* Host roofline: the all-reduce of 4 KiB over 4 devices costs 20 us launch +
 * 2*3/4 * 4096 B / 9 GB/s + 2*3 * 20 us = 140.7 us; each 256^3 f32 dot costs
 * 2*256^3 / 100 GFLOP/s = 335.5 us, so one dot already hides it. */
static const char *OVERLAP =
    "HloModule overlap, num_partitions=4\n\n%s"
    "ENTRY %%main (g: f32[1024], x: f32[256,256]) -> (f32[1024], f32[256,256]) {\n"
    "  %%g = f32[1024] parameter(0)\n"
    "  %%x = f32[256,256] parameter(1)\n"
    "  %%ar = f32[1024] all-reduce(%%g), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
    "to_apply=%%add\n"
    "  %%scaled = f32[1024] multiply(%%ar, %%ar)\n"
    "  %%d1 = f32[256,256] dot(%%x, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%d2 = f32[256,256] dot(%%d1, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%d3 = f32[256,256] dot(%%d2, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT %%t = (f32[1024], f32[256,256]) tuple(%%scaled, %%d3)\n"
    "}\n";

static char *fmt(const char *f) {
  ts_buf_t b = {0};
  ts_buf_printf(&b, f, ADD);
  return b.data;
}

static void test_overlap(void) {
  char *text = fmt(OVERLAP);
  ts_sched_result_t *r = NULL;
  ts_hlo_module_t *m = schedule(text, NULL, &r);
  EXPECT(m && r);
  if (!m || !r) goto out;
  ts_hlo_comp_t *e = m->entry;
  int s = pos(e, "all-reduce-start.ar"), d = pos(e, "all-reduce-done.ar");
  if (s < 0) s = pos(e, "all-reduce-start"), d = pos(e, "all-reduce-done");
  EXPECT(s >= 0 && d > s);
  /* started before every dot (independent compute), done after all of them
   * and right before its only use */
  EXPECT(s < pos(e, "d1") && s < pos(e, "d2") && s < pos(e, "d3"));
  EXPECT(d > pos(e, "d3"));
  EXPECT(d + 1 == pos(e, "scaled"));
  EXPECT(r->converted == 1 && r->npairs == 1);
  EXPECT(r->npairs == 1 && r->pairs[0].wasted_s == 0);
  EXPECT(fabs(r->pairs[0].latency_s - (20e-6 + 1.5 * 4096 / 9e9 + 6 * 20e-6)) < 1e-9);
  EXPECT(r->overlap == 1);
  /* step = the three dots + the multiply; the collective is hidden */
  double dots = 3 * 2.0 * 256 * 256 * 256 / 100e9, mul = 3 * 4096 / 18.5e9;
  EXPECT(fabs(r->step_time_s - (dots + mul)) < 1e-9);
  ts_buf_t b = {0};
  ts_hlo_print(m, &b);
  EXPECT(b.data && strstr(b.data, "is_scheduled=true"));
  ts_buf_free(&b);
out:
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
  ts_free(text);
}

/* Only a small multiply to hide behind: the rest is exposed. */
static void test_exposed(void) {
  const char *f = "HloModule exposed, num_partitions=4\n\n%s"
                  "ENTRY %%main (g: f32[1024], y: f32[1024]) -> (f32[1024], f32[1024]) {\n"
                  "  %%g = f32[1024] parameter(0)\n"
                  "  %%y = f32[1024] parameter(1)\n"
                  "  %%ar = f32[1024] all-reduce(%%g), channel_id=1, replica_groups={{0,1,2,3}}, "
                  "use_global_device_ids=true, to_apply=%%add\n"
                  "  %%m = f32[1024] multiply(%%y, %%y)\n"
                  "  ROOT %%t = (f32[1024], f32[1024]) tuple(%%ar, %%m)\n"
                  "}\n";
  char *text = fmt(f);
  ts_sched_result_t *r = NULL;
  ts_hlo_module_t *m = schedule(text, NULL, &r);
  EXPECT(m && r && r->npairs == 1);
  if (m && r && r->npairs == 1) {
    double lat = 20e-6 + 1.5 * 4096 / 9e9 + 6 * 20e-6, mul = 3 * 4096 / 18.5e9;
    EXPECT(pos(m->entry, "all-reduce-start") < pos(m->entry, "m"));
    EXPECT(fabs(r->pairs[0].wasted_s - (lat - mul)) < 1e-9);
    EXPECT(fabs(r->step_time_s - lat) < 1e-9);
    EXPECT(fabs(r->overlap - mul / lat) < 1e-6);
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
  ts_free(text);
}

/* ---- overlap limits --------------------------------------------------------- */

static const char *TWO =
    "HloModule two, num_partitions=4\n\n%s"
    "ENTRY %%main (g1: f32[1024], g2: f32[1024], x: f32[256,256]) -> (f32[1024], f32[1024], f32[256,256]) {\n"
    "  %%g1 = f32[1024] parameter(0)\n"
    "  %%g2 = f32[1024] parameter(1)\n"
    "  %%x = f32[256,256] parameter(2)\n"
    "  %%ar1 = f32[1024] all-reduce(%%g1), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
    "to_apply=%%add\n"
    "  %%ar2 = f32[1024] all-reduce(%%g2), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
    "to_apply=%%add\n"
    "  %%d1 = f32[256,256] dot(%%x, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%d2 = f32[256,256] dot(%%d1, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%d3 = f32[256,256] dot(%%d2, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%d4 = f32[256,256] dot(%%d3, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%u1 = f32[1024] multiply(%%ar1, %%ar1)\n"
    "  %%u2 = f32[1024] multiply(%%ar2, %%ar2)\n"
    "  ROOT %%t = (f32[1024], f32[1024], f32[256,256]) tuple(%%u1, %%u2, %%d4)\n"
    "}\n";

static void test_overlap_limit(void) {
  char *text = fmt(TWO);
  for (int limit = 1; limit <= 2; limit++) {
    ts_sched_opts_t o;
    ts_sched_opts_default(&o);
    for (int k = 0; k < TS_SCHED_KIND_COUNT; k++) o.overlap_limit[k] = limit;
    ts_sched_result_t *r = NULL;
    ts_hlo_module_t *m = schedule(text, &o, &r);
    EXPECT(m && r);
    if (m && r) {
      /* never more than `limit` all-reduces in flight; with 2 allowed both
       * overlap the dots (the limit is what kept them apart) */
      int most = max_in_flight(m->entry);
      fprintf(stderr, "limit %d: at most %d in flight, wasted %.3f us\n", limit, most, r->wasted_s * 1e6);
      EXPECT(most == limit);
      EXPECT(r->wasted_s == 0);
    }
    ts_sched_result_destroy(r);
    ts_hlo_module_destroy(m);
  }
  ts_free(text);
}

/* ---- memory limit ------------------------------------------------------------ */

/* An all-gather of 1 MiB per device into 4 MiB, and an independent chain of
 * 1 MiB temporaries. Hoisting the start over the chain keeps the 4 MiB
 * result live beside the chain's temporaries; under a tight limit the start
 * must move down, next to its use. */
static const char *MEM =
    "HloModule mem, num_partitions=4\n\n%s"
    "ENTRY %%main (g: f32[262144], x: f32[512,512]) -> (f32[], f32[512,512]) {\n"
    "  %%g = f32[262144] parameter(0)\n"
    "  %%x = f32[512,512] parameter(1)\n"
    "  %%ag = f32[1048576] all-gather(%%g), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, "
    "use_global_device_ids=true\n"
    "  %%zero = f32[] constant(0)\n"
    "  %%sum = f32[] reduce(%%ag, %%zero), dimensions={0}, to_apply=%%add\n"
    "  %%e1 = f32[512,512] exponential(%%x)\n"
    "  %%e2 = f32[512,512] add(%%e1, %%x)\n"
    "  %%e3 = f32[512,512] multiply(%%e2, %%e1)\n"
    "  %%e4 = f32[512,512] subtract(%%e3, %%e2)\n"
    "  %%e5 = f32[512,512] add(%%e4, %%e3)\n"
    "  %%e6 = f32[512,512] multiply(%%e5, %%e4)\n"
    "  ROOT %%t = (f32[], f32[512,512]) tuple(%%sum, %%e6)\n"
    "}\n";

static void test_memory_limit(void) {
  char *text = fmt(MEM);
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  o.keep_program_peak = false; /* "unlimited": the default keeps program order's peak */
  ts_sched_result_t *free_r = NULL, *lim_r = NULL;
  ts_hlo_module_t *free_m = schedule(text, &o, &free_r);
  EXPECT(free_m && free_r);
  if (!free_m || !free_r) goto out;
  uint64_t MiB = 1 << 20;
  /* Unlimited: the start heads the chain; the peak holds both parameters
   * (2 MiB), the all-gather result (4 MiB) and the chain's live temporaries. */
  int s0 = pos(free_m->entry, "all-gather-start");
  EXPECT(s0 < pos(free_m->entry, "e1"));
  fprintf(stderr, "no limit: peak %llu bytes, start at %d\n", (unsigned long long)free_r->peak_memory_bytes, s0);
  EXPECT(free_r->peak_memory_bytes > 8 * MiB);

  o.memory_limit = 8 * MiB;
  ts_hlo_module_t *lim_m = schedule(text, &o, &lim_r);
  EXPECT(lim_m && lim_r);
  if (lim_m && lim_r) {
    int s1 = pos(lim_m->entry, "all-gather-start");
    fprintf(stderr, "limit 8 MiB: peak %llu bytes, start at %d\n", (unsigned long long)lim_r->peak_memory_bytes, s1);
    EXPECT(lim_r->peak_memory_bytes <= 8 * MiB);
    EXPECT(s1 > s0); /* a different order: the start moved down */
    EXPECT(s1 > pos(lim_m->entry, "e1"));
  }
  ts_sched_result_destroy(lim_r);
  ts_hlo_module_destroy(lim_m);
out:
  ts_sched_result_destroy(free_r);
  ts_hlo_module_destroy(free_m);
  ts_free(text);
}

/* ---- while bodies ------------------------------------------------------------- */

static const char *LOOP =
    "HloModule loop, num_partitions=4\n\n%s"
    "%%cond (p: (s32[], f32[1024], f32[256,256])) -> pred[] {\n"
    "  %%p = (s32[], f32[1024], f32[256,256]) parameter(0)\n"
    "  %%i = s32[] get-tuple-element(%%p), index=0\n"
    "  %%n = s32[] constant(5)\n"
    "  ROOT %%lt = pred[] compare(%%i, %%n), direction=LT\n"
    "}\n\n"
    "%%body (q: (s32[], f32[1024], f32[256,256])) -> (s32[], f32[1024], f32[256,256]) {\n"
    "  %%q = (s32[], f32[1024], f32[256,256]) parameter(0)\n"
    "  %%i = s32[] get-tuple-element(%%q), index=0\n"
    "  %%g = f32[1024] get-tuple-element(%%q), index=1\n"
    "  %%x = f32[256,256] get-tuple-element(%%q), index=2\n"
    "  %%ar = f32[1024] all-reduce(%%g), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
    "to_apply=%%add\n"
    "  %%h = f32[1024] multiply(%%ar, %%ar)\n"
    "  %%d = f32[256,256] dot(%%x, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %%one = s32[] constant(1)\n"
    "  %%j = s32[] add(%%i, %%one)\n"
    "  ROOT %%r = (s32[], f32[1024], f32[256,256]) tuple(%%j, %%h, %%d)\n"
    "}\n\n"
    "ENTRY %%main (g: f32[1024], x: f32[256,256]) -> (s32[], f32[1024], f32[256,256]) {\n"
    "  %%g = f32[1024] parameter(0)\n"
    "  %%x = f32[256,256] parameter(1)\n"
    "  %%zero = s32[] constant(0)\n"
    "  %%init = (s32[], f32[1024], f32[256,256]) tuple(%%zero, %%g, %%x)\n"
    "  ROOT %%w = (s32[], f32[1024], f32[256,256]) while(%%init), condition=%%cond, body=%%body\n"
    "}\n";

static void test_while(void) {
  char *text = fmt(LOOP);
  ts_sched_result_t *r = NULL;
  ts_sched_opts_t o; /* the pair overlapping the body's compute, beyond program order's peak */
  ts_sched_opts_default(&o);
  o.keep_program_peak = false;
  ts_hlo_module_t *m = schedule(text, &o, &r);
  EXPECT(m && r);
  if (m && r) {
    ts_hlo_comp_t *b = comp(m, "body");
    EXPECT(b != NULL);
    if (b) {
      int s = pos(b, "all-reduce-start"), d = pos(b, "all-reduce-done");
      EXPECT(s >= 0 && s < pos(b, "d") && d > pos(b, "d") && d + 1 == pos(b, "h"));
    }
    /* the pair runs once per iteration: 5 (the counter pattern), hidden */
    EXPECT(r->npairs == 1 && r->pairs[0].executions == 5 && r->pairs[0].wasted_s == 0);
    double dot = 2.0 * 256 * 256 * 256 / 100e9;
    EXPECT(r->step_time_s > 5 * dot && r->step_time_s < 5.1 * dot);
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
  ts_free(text);
}

/* ---- determinism ------------------------------------------------------------- */

static void test_deterministic(void) {
  char *text = fmt(TWO);
  ts_hlo_module_t *a = schedule(text, NULL, NULL), *b = schedule(text, NULL, NULL);
  EXPECT(a && b);
  if (a && b) {
    char *pa = print(a), *pb = print(b);
    EXPECT(pa && pb && strcmp(pa, pb) == 0);
    /* and scheduling a scheduled module again changes nothing */
    ts_hlo_module_t *c = parse(pa);
    EXPECT(c != NULL);
    if (c) {
      ts_sched_opts_t o;
      ts_sched_opts_default(&o);
      ts_diag_t d = {0};
      EXPECT(ts_schedule(c, &o, NULL, &d) == TS_OK);
      char *pc = print(c);
      EXPECT(pc && strcmp(pa, pc) == 0);
      ts_free(pc);
      ts_diag_free(&d);
      ts_hlo_module_destroy(c);
    }
    ts_free(pa);
    ts_free(pb);
  }
  ts_hlo_module_destroy(a);
  ts_hlo_module_destroy(b);
  ts_free(text);
}

/* ---- every async form verifies, prints back and runs as before ---------------- */

static const char *FORMS =
    "HloModule forms, num_partitions=4\n\n%s"
    "ENTRY %%main (a: f32[8,4], x: f32[64,64]) -> (f32[8,4], f32[32,4], f32[2,4], f32[8,4], f32[8,4], f32[8,4], "
    "f32[64,64]) {\n"
    "  %%a = f32[8,4] parameter(0)\n"
    "  %%x = f32[64,64] parameter(1)\n"
    "  %%ar = f32[8,4] all-reduce(%%a), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
    "to_apply=%%add\n"
    "  %%ag = f32[32,4] all-gather(%%a), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, "
    "use_global_device_ids=true\n"
    "  %%rs = f32[2,4] reduce-scatter(%%a), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, "
    "use_global_device_ids=true, to_apply=%%add\n"
    "  %%aa = f32[8,4] all-to-all(%%a), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}\n"
    "  %%cp = f32[8,4] collective-permute(%%a), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
    "  %%cb = f32[8,4] collective-broadcast(%%a), channel_id=6, replica_groups={{0,1,2,3}}\n"
    "  %%d = f32[64,64] dot(%%x, %%x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT %%t = (f32[8,4], f32[32,4], f32[2,4], f32[8,4], f32[8,4], f32[8,4], f32[64,64]) tuple(%%ar, %%ag, "
    "%%rs, %%aa, %%cp, %%cb, %%d)\n"
    "}\n";

static bool run_devices(const ts_hlo_module_t *m, int ndev, ts_value_t **outs) {
  ts_interp_opts_t io = {.ndevices = ndev};
  ts_interp_t *it = NULL;
  ts_diag_t d = {0};
  int np = m->entry->nparams;
  ts_value_t **args = ts_calloc((size_t)(np * ndev) + 1, sizeof *args);
  bool ok = args && ts_interp_create(m, &io, &it, &d) == TS_OK;
  for (int dev = 0; ok && dev < ndev; dev++)
    ok = ts_interp_random_args(m, 100 + (uint64_t)dev, &args[dev * np]) == TS_OK;
  ok = ok && ts_interp_run(it, args, outs, &d) == TS_OK;
  if (!ok) fprintf(stderr, "run: %s", d.text ? d.text : "failed\n");
  for (int k = 0; args && k < np * ndev; k++) ts_value_unref(args[k]);
  ts_free(args);
  ts_interp_destroy(it);
  ts_diag_free(&d);
  return ok;
}

static bool same_values(ts_value_t *a, ts_value_t *b) {
  ts_array_t la[64], lb[64];
  int na = ts_value_leaves(a, la, 64), nb = ts_value_leaves(b, lb, 64);
  if (na != nb || na > 64) return false;
  for (int k = 0; k < na; k++)
    if (ts_array_bytes(&la[k]) != ts_array_bytes(&lb[k]) || memcmp(la[k].data, lb[k].data, ts_array_bytes(&la[k])))
      return false;
  return true;
}

static void test_forms(void) {
  char *text = fmt(FORMS);
  ts_hlo_module_t *ref = parse(text);
  ts_sched_result_t *r = NULL;
  ts_hlo_module_t *m = schedule(text, NULL, &r);
  EXPECT(ref && m && r);
  if (!ref || !m || !r) goto out;
  EXPECT(r->converted == 6 && r->npairs == 6);
  char *p = print(m);
  EXPECT(p && strstr(p, "all-reduce-start(") && strstr(p, "all-reduce-done("));
  EXPECT(p && strstr(p, "all-gather-start(") && strstr(p, "all-gather-done("));
  EXPECT(p && strstr(p, "collective-permute-start(") && strstr(p, "collective-permute-done("));
  EXPECT(p && strstr(p, "async-start(") && strstr(p, "async-done(") && strstr(p, "calls=%wrapped_rs"));
  EXPECT(p && strstr(p, "(f32[8,4], f32[8,4], u32[], u32[]) collective-permute-start("));
  EXPECT(p && strstr(p, "((f32[8,4]), f32[2,4]) async-start("));
  EXPECT(p && strstr(p, "(f32[8,4], f32[32,4]) all-gather-start("));
  /* the printed module parses and verifies again */
  ts_hlo_module_t *back = p ? parse(p) : NULL;
  EXPECT(back != NULL);
  if (p && !back) fputs(p, stderr);
  /* and computes what the synchronous module computes, bit for bit */
  ts_value_t *want[4] = {0}, *got[4] = {0};
  EXPECT(run_devices(ref, 4, want) && run_devices(back ? back : m, 4, got));
  for (int d = 0; d < 4; d++) {
    EXPECT(want[d] && got[d] && same_values(want[d], got[d]));
    ts_value_unref(want[d]);
    ts_value_unref(got[d]);
  }
  ts_hlo_module_destroy(back);
  ts_free(p);
out:
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(ref);
  ts_hlo_module_destroy(m);
  ts_free(text);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
      {"overlap", test_overlap},       {"exposed", test_exposed},
      {"overlap_limit", test_overlap_limit}, {"memory_limit", test_memory_limit},
      {"while", test_while},           {"deterministic", test_deterministic},
      {"forms", test_forms},
  };
  int ran = 0;
  for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
    if (argc < 2 || strcmp(argv[1], tests[k].name) == 0) {
      tests[k].fn();
      ran++;
    }
  if (!ran) {
    fprintf(stderr, "unknown test '%s'\n", argv[1]);
    return 2;
  }
  ts_interp_release_buffers();
  return failures ? 1 : 0;
}
