/* TESSERA_FAULT: every form parses to the right fields, bad specs are one
 * clear error, and the hook does what each fault says (stall waits in
 * compute until aborted, netdrop names the peer, slow sleeps per op and
 * progresses, input-stall blocks the feeder, identity changes). */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "ts_coll.h"
#include "ts_hang.h"
#include "ts_test.h"

static ts_hang_fault_t parse_ok(const char *s) {
  ts_hang_fault_t f;
  ts_diag_t d = {0};
  if (ts_hang_fault_parse(s, &f, &d) != TS_OK) {
    fprintf(stderr, "FAIL: '%s' did not parse: %s\n", s, d.text);
    failures++;
  }
  ts_diag_free(&d);
  return f;
}

static void parse_bad(const char *s, const char *want) {
  ts_hang_fault_t f;
  ts_diag_t d = {0};
  ts_status_t st = ts_hang_fault_parse(s, &f, &d);
  if (st != TS_ERR_INVALID_USAGE || !d.text || !strstr(d.text, want)) {
    fprintf(stderr, "FAIL: '%s': status %d, message '%s', want '%s'\n", s, st, d.text ? d.text : "", want);
    failures++;
  }
  ts_diag_free(&d);
}

static void parsing(void) {
  ts_hang_fault_t f = parse_ok("stall:rank=1:step=3");
  EXPECT(f.kind == TS_HANG_FAULT_STALL && f.rank == 1 && f.step == 3);
  f = parse_ok("stall:rank=all:step=2");
  EXPECT(f.kind == TS_HANG_FAULT_STALL && f.rank == -1 && f.step == 2 && ts_hang_fault_hits(&f, 7));
  f = parse_ok("crash:rank=0:step=5");
  EXPECT(f.kind == TS_HANG_FAULT_CRASH && f.rank == 0 && f.step == 5 && !ts_hang_fault_hits(&f, 1));
  f = parse_ok("netdrop:ranks=1,3:step=4");
  EXPECT(f.kind == TS_HANG_FAULT_NETDROP && f.rank == 1 && f.rank_b == 3 && f.step == 4);
  EXPECT(ts_hang_fault_hits(&f, 3) && ts_hang_fault_hits(&f, 1) && !ts_hang_fault_hits(&f, 2));
  f = parse_ok("module:rank=2");
  EXPECT(f.kind == TS_HANG_FAULT_MODULE && f.rank == 2 && f.step == 0);
  f = parse_ok("fingerprint:rank=3");
  EXPECT(f.kind == TS_HANG_FAULT_FINGERPRINT && f.rank == 3);
  f = parse_ok("input-stall:rank=2:step=6");
  EXPECT(f.kind == TS_HANG_FAULT_INPUT_STALL && f.rank == 2 && f.step == 6);
  f = parse_ok("slow:rank=1:step=2:seconds=7.5");
  EXPECT(f.kind == TS_HANG_FAULT_SLOW && f.rank == 1 && f.step == 2 && f.seconds == 7.5);
  f = parse_ok("slow:rank=1");
  EXPECT(f.kind == TS_HANG_FAULT_SLOW && f.rank == 1 && f.step == 0 && f.seconds == 0);
  f = parse_ok("slow:rank=0:seconds=2");
  EXPECT(f.kind == TS_HANG_FAULT_SLOW && f.step == 0 && f.seconds == 2);
  f = parse_ok("");
  EXPECT(f.kind == TS_HANG_FAULT_NONE && !ts_hang_fault_hits(&f, 0));
  f = parse_ok(NULL);
  EXPECT_EQ(f.kind, TS_HANG_FAULT_NONE);

  parse_bad("hang:rank=1:step=2", "unknown fault 'hang'");
  parse_bad("stall:rank=1", "step=K is required");
  parse_bad("stall:step=1", "rank=R is required");
  parse_bad("stall:rank=x:step=1", "rank wants a rank number or all, got 'x'");
  parse_bad("crash:rank=all:step=1", "rank wants a rank number, got 'all'");
  parse_bad("stall:rank=1:step=0", "step wants a step number from 1, got '0'");
  parse_bad("netdrop:ranks=1:step=2", "ranks wants two different ranks A,B, got '1'");
  parse_bad("netdrop:ranks=2,2:step=2", "ranks wants two different ranks A,B, got '2,2'");
  parse_bad("netdrop:rank=1:step=2", "unexpected field 'rank=1'");
  parse_bad("slow:rank=1:seconds=-1", "seconds wants a positive number, got '-1'");
  parse_bad("stall:rank=1:step=2:seconds=3", "unexpected field 'seconds=3'");
  parse_bad("stall:rank=1:step", "field 'step' is not KEY=VALUE");
  parse_bad("stall::rank=1", "field '' is not KEY=VALUE");
}

static void identity(void) {
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "jit_step", 42, 9, 2, 4);
  EXPECT(!strcmp(p.module_name, "jit_step") && p.fingerprint == 42 && p.rank == 2 && p.size == 4);
  EXPECT(atomic_load(&p.instr) == -1 && atomic_load(&p.t_progress_ns) != 0);
  ts_hang_fault_t f = parse_ok("fingerprint:rank=2");
  ts_hang_fault_identity(&f, &p);
  EXPECT(!strcmp(p.module_name, "jit_step") && p.fingerprint != 42);
  ts_hang_identity_fill(&p, "jit_step", 42, 9, 2, 4);
  f = parse_ok("module:rank=2");
  ts_hang_fault_identity(&f, &p);
  EXPECT(strcmp(p.module_name, "jit_step") != 0 && p.fingerprint != 42);
  ts_hang_identity_fill(&p, "jit_step", 42, 9, 1, 4);
  ts_hang_fault_identity(&f, &p); /* not this rank */
  EXPECT(!strcmp(p.module_name, "jit_step") && p.fingerprint == 42);
}

typedef struct {
  ts_hang_fault_hook_t *h;
  int64_t step;
  int instr;
  bool input;
  ts_status_t st;
} call_t;

static void *call(void *arg) {
  call_t *c = arg;
  c->st = c->input ? ts_hang_fault_before_input(c->h, c->step) : ts_hang_fault_hook(c->h, c->step, c->instr);
  return NULL;
}

static void nap(double s) {
  struct timespec ts = {0, (long)(s * 1e9)};
  nanosleep(&ts, NULL);
}

/* Runs the hook (or the input check) on a thread; after `wait_s` checks
 * the progress record, aborts, and expects the call to return REMOTE. */
static void blocking(const char *spec, int rank, int64_t step, int instr, bool input, int want_activity,
                     int want_waiting_on) {
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "m", 1, 1, rank, 4);
  ts_hang_fault_t f = parse_ok(spec);
  ts_hang_fault_hook_t h;
  ts_hang_fault_hook_init(&h, &f, rank, &p);
  call_t c = {&h, step, instr, input, TS_OK};
  pthread_t th;
  pthread_create(&th, NULL, call, &c);
  nap(0.1);
  EXPECT_EQ(atomic_load(&p.activity), want_activity);
  EXPECT_EQ(atomic_load(&p.waiting_on1), want_waiting_on + 1);
  EXPECT(h.t_fired > 0);
  ts_hang_fault_hook_abort(&h);
  pthread_join(th, NULL);
  EXPECT_EQ(c.st, TS_ERR_REMOTE);
  EXPECT_EQ(atomic_load(&p.waiting_on1), 0);
  ts_hang_fault_hook_fini(&h);
}

static void hook(void) {
  blocking("stall:rank=1:step=2", 1, 2, 3, false, TS_HANG_COMPUTE, -1);
  blocking("stall:rank=all:step=2", 3, 2, 0, false, TS_HANG_COMPUTE, -1);
  blocking("netdrop:ranks=1,2:step=2", 2, 2, 0, false, TS_HANG_COLLECTIVE, 1);
  blocking("netdrop:ranks=1,2:step=2", 1, 2, 0, false, TS_HANG_COLLECTIVE, 2);
  blocking("module:rank=0", 0, 1, 0, false, TS_HANG_COLLECTIVE, -1);
  blocking("input-stall:rank=3:step=4", 3, 4, 0, true, TS_HANG_INPUT_WAIT, -1);

  /* Not this rank, not this step: no effect, at once. */
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "m", 1, 1, 0, 4);
  ts_hang_fault_t f = parse_ok("stall:rank=1:step=2");
  ts_hang_fault_hook_t h;
  ts_hang_fault_hook_init(&h, &f, 0, &p);
  EXPECT_EQ(ts_hang_fault_hook(&h, 2, 0), TS_OK);
  ts_hang_fault_hook_init(&h, &f, 1, &p);
  EXPECT_EQ(ts_hang_fault_hook(&h, 1, 0), TS_OK);
  f = parse_ok("input-stall:rank=1:step=3");
  ts_hang_fault_hook_init(&h, &f, 1, &p);
  EXPECT_EQ(ts_hang_fault_before_input(&h, 2), TS_OK);

  /* netdrop waits for the first collective instruction of its step. */
  f = parse_ok("netdrop:ranks=0,1:step=1");
  ts_hang_fault_hook_init(&h, &f, 0, &p);
  bool is[4] = {false, false, true, false};
  h.is_collective = NULL;
  h.ninstrs = 4;
  const bool *save = is;
  h.is_collective = save;
  EXPECT_EQ(ts_hang_fault_hook(&h, 1, 0), TS_OK);
  EXPECT_EQ(ts_hang_fault_hook(&h, 1, 1), TS_OK);
  ts_hang_fault_hook_abort(&h); /* the next would block: abort first, it returns REMOTE */
  EXPECT_EQ(ts_hang_fault_hook(&h, 1, 2), TS_ERR_REMOTE);
  h.is_collective = NULL; /* not ours to free */

  /* slow:seconds: 4 ops seen in step 1, so each op of step 2 sleeps 0.2/4 s. */
  f = parse_ok("slow:rank=0:step=2:seconds=0.2");
  ts_hang_fault_hook_init(&h, &f, 0, &p);
  for (int i = 0; i < 4; i++) EXPECT_EQ(ts_hang_fault_hook(&h, 1, i), TS_OK);
  double t0 = ts_coll_now();
  for (int i = 0; i < 4; i++) EXPECT_EQ(ts_hang_fault_hook(&h, 2, i), TS_OK);
  double dt = ts_coll_now() - t0;
  printf("slow step: %.3f s (want about 0.2)\n", dt);
  EXPECT(dt > 0.18 && dt < 0.6);
  t0 = ts_coll_now();
  for (int i = 0; i < 4; i++) EXPECT_EQ(ts_hang_fault_hook(&h, 3, i), TS_OK);
  EXPECT(ts_coll_now() - t0 < 0.05); /* step 3 is not slowed */

  /* slow without seconds: TS_HANG_SLOW_OP_S per op on every step. */
  f = parse_ok("slow:rank=0");
  ts_hang_fault_hook_init(&h, &f, 0, &p);
  t0 = ts_coll_now();
  for (int i = 0; i < 10; i++) EXPECT_EQ(ts_hang_fault_hook(&h, 5, i), TS_OK);
  dt = ts_coll_now() - t0;
  EXPECT(dt >= 10 * TS_HANG_SLOW_OP_S * 0.9 && dt < 10 * TS_HANG_SLOW_OP_S * 4);
}

int main(void) {
  parsing();
  identity();
  hook();
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
