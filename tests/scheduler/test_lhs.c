/* Latency-hiding scheduler cases in the style of XLA's
 * latency_hiding_scheduler_test.cc (per-device programs with async pairs,
 * while loops, in-place permutes), written for Tessera: the modules are in
 * tests/scheduler/lhs/, argv[1] names the case, argv[2] is that folder.
 * Each asserts an order XLA's tests assert, or what the schedule verifier
 * must reject. Costs: the host roofline. */
#include "../ts_test.h"
#include "ts_hlo.h"
#include "ts_partitioner.h"
#include "ts_scheduler.h"

#include <stdlib.h>
#include <string.h>

static const char *dir;

static ts_hlo_module_t *load(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  ts_diag_t d = {0};
  char *text = NULL;
  size_t len = 0;
  ts_hlo_module_t *m = NULL;
  if (ts_read_file(path, &text, &len, &d) == TS_OK) {
    ts_source_t src = {path, text, len};
    if (ts_hlo_parse(&src, NULL, &m, &d) != TS_OK || ts_hlo_verify(m, NULL, &d) != TS_OK) {
      ts_hlo_module_destroy(m);
      m = NULL;
    }
  }
  if (!m) fprintf(stderr, "%s: %s", path, d.text ? d.text : "cannot load\n");
  ts_free(text);
  ts_diag_free(&d);
  return m;
}

/* Schedules m in place; verifies the result. */
static bool schedule(ts_hlo_module_t *m, const ts_sched_opts_t *o, ts_sched_result_t **r) {
  ts_diag_t d = {0};
  ts_status_t st = ts_schedule(m, o, r, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st != TS_OK) fprintf(stderr, "schedule/verify: %s\n%s", ts_status_string(st), d.text ? d.text : "");
  ts_diag_free(&d);
  return st == TS_OK;
}

static int pos(const ts_hlo_comp_t *c, const char *name) {
  for (int k = 0; k < c->ninstrs; k++)
    if (strcmp(c->instrs[k]->name, name) == 0) return k;
  return -1;
}

static ts_hlo_instr_t *find(const ts_hlo_comp_t *c, const char *name) {
  int k = pos(c, name);
  return k < 0 ? NULL : c->instrs[k];
}

/* Verifies m as it stands; the verifier's message, or NULL when it passes. */
static char *verify_message(ts_hlo_module_t *m) {
  ts_diag_t d = {0};
  ts_status_t st = ts_hlo_verify(m, NULL, &d);
  char *msg = st == TS_OK ? NULL : strdup(d.text ? d.text : "?");
  ts_diag_free(&d);
  return msg;
}

static void mark_scheduled(ts_hlo_module_t *m) {
  for (int k = 0; k < m->nattrs; k++)
    if (strcmp(m->attrs[k].name, "is_scheduled") == 0) {
      m->attrs[k].kind = TS_ATTR_BOOL;
      m->attrs[k].v.b = true;
      return;
    }
  ts_hlo_attr_t a = {.name = "is_scheduled", .kind = TS_ATTR_BOOL};
  a.v.b = true;
  EXPECT(ts_hlo_module_add_attr(m, &a) == TS_OK);
}

/* ---- the while-body aliasing hazard (XLA's WhileLoopAliasingBug) ---------- */

/* while_alias.hlo scheduled with two collective-permutes in flight, the order
 * the hazard tests start from; *r (r may be NULL) as ts_schedule's. */
static ts_hlo_module_t *load_while_alias(ts_sched_result_t **r) {
  ts_hlo_module_t *m = load("while_alias.hlo");
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  o.overlap_limit[TS_COLL_COLLECTIVE_PERMUTE] = 2;
  EXPECT(m && schedule(m, &o, r));
  return m;
}

/* cp2's done becomes loop element 0, the buffer that %x and %view name:
 * cp2's start must follow %sum, the last reader of %view. */
static void test_hazard(void) {
  ts_sched_result_t *r = NULL;
  ts_hlo_module_t *m = load_while_alias(&r);
  if (m && r) {
    ts_hlo_comp_t *b = ts_hlo_module_find_comp(m, "body");
    int s = pos(b, "cp2-start");
    fprintf(stderr, "cp2-start at %d, view at %d, sum at %d\n", s, pos(b, "view"), pos(b, "sum"));
    EXPECT(s > pos(b, "sum") && s > pos(b, "view") && s > pos(b, "cp1-done"));
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
}

/* The order the scheduler used to give (cp2-start above %view and %sum),
 * written as a scheduled module: the verifier rejects it, naming the reader;
 * moved below %sum it passes. */
static void test_verify_hazard(void) {
  ts_hlo_module_t *m = load_while_alias(NULL);
  if (!m) return;
  ts_hlo_comp_t *b = ts_hlo_module_find_comp(m, "body");
  int s = pos(b, "cp2-start"), v = pos(b, "view");
  EXPECT(s > v && v >= 0);
  if (s > v && v >= 0) {
    ts_hlo_instr_t *start = b->instrs[s];
    memmove(&b->instrs[v + 1], &b->instrs[v], sizeof b->instrs[0] * (size_t)(s - v));
    b->instrs[v] = start; /* cp2-start now right above %view */
  }
  char *msg = verify_message(m);
  fprintf(stderr, "verifier: %s", msg ? msg : "accepted\n");
  EXPECT(msg && strstr(msg, "cp2-start") && strstr(msg, "'view'") && strstr(msg, "buffer"));
  free(msg);
  ts_hlo_module_destroy(m);
}

/* ---- async pairs are one value ---------------------------------------------- */

/* A per-device program partitioned again (2 devices, everything
 * replicated): the done still takes the start itself, and the pair overlaps
 * a convolution. */
static void test_pairs_partitioned(void) {
  ts_hlo_module_t *m = load("ag_balance.hlo"), *pm = NULL;
  ts_diag_t d = {0};
  ts_partition_opts_t po;
  memset(&po, 0, sizeof po);
  po.num_partitions = 2;
  EXPECT(m && ts_partition(m, &po, &pm, &d) == TS_OK);
  if (d.text) fprintf(stderr, "%s", d.text);
  ts_diag_free(&d);
  ts_sched_result_t *r = NULL;
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  o.memory_limit = UINT64_C(1) << 30;
  EXPECT(pm && schedule(pm, &o, &r));
  if (pm && r) {
    const ts_hlo_comp_t *e = pm->entry;
    int pairs = 0;
    for (int k = 0; k < e->ninstrs; k++) {
      const ts_hlo_instr_t *i = e->instrs[k];
      if (i->op != TS_OP_ALL_GATHER_DONE) continue;
      pairs++;
      EXPECT(i->ops[0]->op == TS_OP_ALL_GATHER_START);
    }
    EXPECT(pairs == 2 && r->npairs == 2);
    EXPECT(r->wasted_s == 0);
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(pm);
  ts_hlo_module_destroy(m);
}

/* A done fed through get-tuple-element/tuple of its start is rejected. */
static void test_verify_pairs(void) {
  ts_hlo_module_t *m = load("broken_pair.hlo");
  EXPECT(m == NULL); /* load verifies: it must fail */
  ts_hlo_module_destroy(m);
}

/* ---- in-place permutes -------------------------------------------------------- */

/* No memory target: the start's operand element and contexts are buffers
 * of their own (ts_hlo_leaf_source), so an open window costs their bytes
 * over program order's peak, which the default target refuses. */
static void test_inplace(void) {
  ts_hlo_module_t *m = load("cp_inplace.hlo");
  ts_sched_result_t *r = NULL;
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  o.keep_program_peak = false;
  EXPECT(m && schedule(m, &o, &r));
  if (m && r) {
    const ts_hlo_comp_t *e = m->entry;
    ts_hlo_instr_t *s = find(e, "cp-start"), *dn = find(e, "cp-done");
    EXPECT(s && dn && s->op == TS_OP_COLLECTIVE_PERMUTE_START && s->nops == 4);
    EXPECT(pos(e, "cp-start") < pos(e, "d") && pos(e, "d") < pos(e, "cp-done"));
    EXPECT(r->npairs == 1 && r->wasted_s == 0 && r->pairs[0].hidden_s == r->pairs[0].latency_s);
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
}

/* Created dones keep the collective's metadata. */
static void test_metadata(void) {
  ts_hlo_module_t *m = load("cp_inplace.hlo");
  EXPECT(m && schedule(m, NULL, NULL));
  if (m) {
    ts_hlo_instr_t *dn = find(m->entry, "cp-done");
    const ts_hlo_attr_t *a = dn ? ts_hlo_instr_attr(dn, "metadata") : NULL;
    EXPECT(a && a->v.s && strstr(a->v.s, "cp_inplace"));
  }
  ts_hlo_module_destroy(m);
}

/* ---- balance: two permutes, two convolutions, one permute at a time ------- */

/* Each 240 MiB permute takes 28.0 ms on the host roofline, each convolution
 * 21.5 ms: neither is hidden whole. Balanced (XLA's AllGatherAsyncBalance
 * order), each permute overlaps one convolution and 6.5 ms of it shows,
 * 13.05 ms in all; one permute over both convolutions and the other over
 * nothing shows 28.0 ms. */
static void test_balance(void) {
  ts_hlo_module_t *m = load("cp_balance.hlo");
  ts_sched_result_t *r = NULL;
  ts_sched_opts_t o; /* no memory target, as test_inplace */
  ts_sched_opts_default(&o);
  o.keep_program_peak = false;
  EXPECT(m && schedule(m, &o, &r));
  if (m && r) {
    const ts_hlo_comp_t *e = m->entry;
    int s0 = pos(e, "cp0-start"), d0 = pos(e, "cp0-done"), s1 = pos(e, "cp1-start"), d1 = pos(e, "cp1-done");
    int c0 = pos(e, "c0"), c1 = pos(e, "c1");
    int in0 = (s0 < c0 && c0 < d0) + (s0 < c1 && c1 < d0), in1 = (s1 < c0 && c0 < d1) + (s1 < c1 && c1 < d1);
    fprintf(stderr, "convolutions under cp0: %d, under cp1: %d; exposed %.3f us\n", in0, in1, r->wasted_s * 1e6);
    EXPECT(in0 == 1 && in1 == 1);
    EXPECT(r->npairs == 2);
    for (int k = 0; k < r->npairs; k++) EXPECT(r->pairs[k].hidden_s > 0.7 * r->pairs[k].latency_s);
    EXPECT(r->wasted_s < 0.5 * r->pairs[0].latency_s);
  }
  ts_sched_result_destroy(r);
  ts_hlo_module_destroy(m);
}

/* ---- overlap limits across a while: its nested pairs count ------------------- */

/* Limit 2; the body keeps 2 permutes in flight: %outer must not span %w. */
static void test_while_limit(void) {
  ts_hlo_module_t *m = load("while_limit.hlo");
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  o.overlap_limit[TS_COLL_COLLECTIVE_PERMUTE] = 2;
  o.memory_limit = UINT64_C(1) << 30;
  EXPECT(m && schedule(m, &o, NULL));
  if (m) {
    const ts_hlo_comp_t *e = m->entry, *b = ts_hlo_module_find_comp(m, "body");
    int w = pos(e, "w"), s = pos(e, "outer-start"), d = pos(e, "outer-done");
    EXPECT(pos(b, "pu-start") < pos(b, "pv-done") && pos(b, "pv-start") < pos(b, "pu-done")); /* 2 inside */
    EXPECT(!(s < w && w < d));
  }
  ts_hlo_module_destroy(m);
}

/* ---- memory: by default never above program order's peak ------------------- */

static void test_memory_default(void) {
  ts_hlo_module_t *m = load("ag_balance.hlo"), *m2 = load("ag_balance.hlo");
  ts_sched_result_t *r = NULL, *r2 = NULL;
  ts_sched_opts_t o;
  ts_sched_opts_default(&o);
  EXPECT(m && schedule(m, NULL, &r));
  o.memory_limit = UINT64_C(1) << 30;
  EXPECT(m2 && schedule(m2, &o, &r2));
  if (r && r2) {
    fprintf(stderr, "default: peak %llu (program order %llu), step %.3f us; 1 GiB limit: peak %llu, step %.3f us\n",
            (unsigned long long)r->peak_memory_bytes, (unsigned long long)r->program_order_peak_bytes,
            r->step_time_s * 1e6, (unsigned long long)r2->peak_memory_bytes, r2->step_time_s * 1e6);
    EXPECT(r->peak_memory_bytes <= r->program_order_peak_bytes);
    EXPECT(r2->peak_memory_bytes > r->program_order_peak_bytes); /* the limit lets it trade memory for overlap */
    EXPECT(r2->step_time_s < r->step_time_s);
    EXPECT(r->step_time_s <= r->program_order_step_s);
  }
  ts_sched_result_destroy(r);
  ts_sched_result_destroy(r2);
  ts_hlo_module_destroy(m);
  ts_hlo_module_destroy(m2);
}

/* ---- random schedules: the verifier catches every buffer-order violation --- */

/* Random topological orders of the scheduled while body. The oracle, by
 * hand from the module: cp2-start writes loop element 0, which %x, %view and
 * %cp1-start read (through %x), so a schedule is wrong exactly when one of
 * %view, %sum, %cp1-start comes after cp2-start. */
static void test_random_hazards(void) {
  ts_hlo_module_t *m = load_while_alias(NULL);
  if (!m) return;
  mark_scheduled(m);
  ts_hlo_comp_t *b = ts_hlo_module_find_comp(m, "body");
  int n = b->ninstrs, bad = 0, good = 0, wrong = 0;
  ts_hlo_instr_t **orig = malloc(sizeof *orig * (size_t)n);
  memcpy(orig, b->instrs, sizeof *orig * (size_t)n);
  srand(21);
  for (int trial = 0; trial < 400; trial++) {
    bool placed[64] = {0};
    for (int q = 0; q < n; q++) { /* pick any instruction whose operands are placed */
      int ready[64], nr = 0;
      for (int k = 0; k < n; k++) {
        if (placed[k]) continue;
        bool ok = true;
        for (int op = 0; op < orig[k]->nops; op++)
          for (int j = 0; j < n; j++)
            if (orig[j] == orig[k]->ops[op] && !placed[j]) ok = false;
        if (ok) ready[nr++] = k;
      }
      int k = ready[rand() % nr];
      placed[k] = true;
      b->instrs[q] = orig[k];
    }
    int s = pos(b, "cp2-start");
    bool violates = pos(b, "view") > s || pos(b, "sum") > s || pos(b, "cp1-start") > s;
    char *msg = verify_message(m);
    if (violates) bad++;
    else good++;
    if ((msg != NULL) != violates) {
      wrong++;
      fprintf(stderr, "trial %d: oracle says %s, verifier: %s", trial, violates ? "violation" : "fine",
              msg ? msg : "accepted\n");
    }
    free(msg);
  }
  fprintf(stderr, "%d random schedules: %d violate, %d fine, %d misjudged\n", bad + good, bad, good, wrong);
  EXPECT(wrong == 0 && bad > 0 && good > 0);
  memcpy(b->instrs, orig, sizeof *orig * (size_t)n);
  free(orig);
  ts_hlo_module_destroy(m);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_lhs CASE DIR\n");
    return 2;
  }
  dir = argv[2];
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"hazard", test_hazard},           {"verify_hazard", test_verify_hazard},
               {"pairs_partitioned", test_pairs_partitioned}, {"verify_pairs", test_verify_pairs},
               {"inplace", test_inplace},         {"metadata", test_metadata},
               {"balance", test_balance},         {"while_limit", test_while_limit},
               {"memory_default", test_memory_default}, {"random_hazards", test_random_hazards}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    if (strcmp(argv[1], cases[k].name) == 0) {
      cases[k].fn();
      return failures ? 1 : 0;
    }
  fprintf(stderr, "test_lhs: no case '%s'\n", argv[1]);
  return 2;
}
