/* The classifier on synthetic worker states: every cause with exactly its
 * culprits, and the healthy waiters never blamed. Expected culprits are
 * worked out by hand from each scenario's story. */
#include <string.h>

#include "ts_coll.h"
#include "ts_hang.h"
#include "ts_test.h"

#define N 4

static ts_hang_state_t w[8];

/* Every worker healthy, at step 3, waiting in all-reduce seq 9 of comm 1. */
static void reset(int n) {
  memset(w, 0, sizeof w);
  for (int r = 0; r < n; r++) {
    w[r].rank = r;
    w[r].size = n;
    snprintf(w[r].host, sizeof w[r].host, "host%d", r);
    strcpy(w[r].module, "jit_train_step");
    w[r].fingerprint = 0xabc;
    w[r].launch_id = 1;
    w[r].step = 3;
    w[r].activity = TS_HANG_COLLECTIVE;
    w[r].instr = 4;
    strcpy(w[r].instr_name, "all-reduce.4");
    w[r].waiting_on = -1;
    w[r].status = TS_HANG_WORKER_OK;
    w[r].event_time = 1000 + r;
    w[r].ncolls = 2;
    w[r].colls[0] = (ts_hang_coll_t){1, 9, TS_COLL_ALL_REDUCE, TS_COLL_STARTED, 0, -1, -1, 64, 5, 5, -1};
    w[r].colls[1] = (ts_hang_coll_t){1, 8, TS_COLL_ALL_REDUCE, TS_COLL_COMPLETED, 0, -1, -1, 64, 6, 6, 5.5};
  }
}

/* Rank r has not posted seq 9 yet: it is elsewhere. */
static void not_posted(int r, int activity) {
  w[r].activity = activity;
  w[r].colls[0] = w[r].colls[1];
  w[r].ncolls = 1;
  strcpy(w[r].instr_name, "fusion.2");
}

/* Rank r failed with `error`. */
static void failed(int r, ts_status_t error) {
  w[r].activity = TS_HANG_FAILED;
  w[r].error = error;
}

static void check(const char *name, int n, ts_hang_cause_t cause, const char *culprits) {
  ts_hang_verdict_t v;
  EXPECT_EQ(ts_hang_classify(w, n, &v), TS_OK);
  char got[128] = "";
  for (int i = 0; i < v.nculprits; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", i ? "," : "", v.culprits[i]);
  if (v.cause != cause || strcmp(got, culprits)) {
    fprintf(stderr, "FAIL %s: got %s [%s], want %s [%s] (%s)\n", name, ts_hang_cause_key(v.cause), got,
            ts_hang_cause_key(cause), culprits, v.reason);
    failures++;
  } else {
    printf("ok %s: %s [%s] (%s)\n", name, ts_hang_cause_key(v.cause), got, v.reason);
  }
  ts_hang_verdict_free(&v);
}

int main(void) {
  /* bad device: rank 2 computes forever; the others wait on it. */
  reset(N);
  not_posted(2, TS_HANG_COMPUTE);
  for (int r = 0; r < N; r++)
    if (r != 2) w[r].colls[0].waiting_on = 2;
  check("bad_device", N, TS_HANG_CAUSE_BAD_DEVICE, "2");

  /* bad device with chained waits (ring): 0 waits on 3, 3 on 2, 2 computes. */
  reset(N);
  not_posted(2, TS_HANG_COMPUTE);
  w[0].colls[0].waiting_on = 3;
  w[3].colls[0].waiting_on = 2;
  w[1].colls[0].waiting_on = 0;
  check("bad_device_ring", N, TS_HANG_CAUSE_BAD_DEVICE, "2");

  /* every worker in compute: nobody to tell apart. */
  reset(N);
  for (int r = 0; r < N; r++) not_posted(r, TS_HANG_COMPUTE);
  check("unknown_all_compute", N, TS_HANG_CAUSE_UNKNOWN, "");

  /* all waiting, no evidence of who is behind. */
  reset(N);
  check("unknown_all_waiting", N, TS_HANG_CAUSE_UNKNOWN, "");

  /* networking, records: 1 waits on 3 in seq 9, but 3 completed seq 9
   * (the data it sent never arrived); 0 and 2 wait on 1. */
  reset(N);
  w[1].colls[0].waiting_on = 3;
  w[3].colls[0].state = TS_COLL_COMPLETED;
  w[3].colls[0].age_completed_s = 4;
  w[3].activity = TS_HANG_COLLECTIVE; /* stuck later, in seq 10, waiting on 1 */
  w[3].colls[1] = w[3].colls[0];
  w[3].colls[0] = (ts_hang_coll_t){1, 10, TS_COLL_ALL_REDUCE, TS_COLL_STARTED, 0, -1, 1, 64, 3, 3, -1};
  w[0].colls[0].waiting_on = 1;
  w[2].colls[0].waiting_on = 1;
  check("networking_sender_done", N, TS_HANG_CAUSE_NETWORKING, "1,3");

  /* networking, emulated (netdrop): 1 and 2 wait on each other before
   * posting; 0 and 3 wait on them. */
  reset(N);
  not_posted(1, TS_HANG_COLLECTIVE);
  not_posted(2, TS_HANG_COLLECTIVE);
  w[1].waiting_on = 2;
  w[2].waiting_on = 1;
  w[0].colls[0].waiting_on = 1;
  w[3].colls[0].waiting_on = 2;
  check("networking_mutual", N, TS_HANG_CAUSE_NETWORKING, "1,2");

  /* one host in several broken links: host "hx" (ranks 0 and 4) is an end
   * of 3 links; the other ends are on 3 other hosts. */
  reset(8);
  for (int r = 0; r < 8; r++) snprintf(w[r].host, sizeof w[r].host, "h%d", r);
  strcpy(w[0].host, "hx");
  strcpy(w[4].host, "hx");
  w[1].waiting_on = 0;
  w[0].waiting_on = 1;
  w[2].waiting_on = 4;
  w[4].waiting_on = 2;
  w[3].waiting_on = 0; /* 0 waits on 1, not on 3: no mutual wait, no link */
  w[5].waiting_on = 6;
  w[6].waiting_on = 5;
  check("networking_host_in_two_of_three", 8, TS_HANG_CAUSE_NETWORKING, "0,4,5,6");
  strcpy(w[6].host, "hx");
  check("networking_recurring_host", 8, TS_HANG_CAUSE_NETWORKING, "0,4,6");

  /* different modules: rank 3 runs another module (and waits in its own
   * collective); the others wait for it. */
  reset(N);
  strcpy(w[3].module, "jit_optimizer_apply");
  w[3].fingerprint = 0xdef;
  not_posted(3, TS_HANG_COLLECTIVE);
  check("different_modules", N, TS_HANG_CAUSE_DIFFERENT_MODULES, "3");

  /* two against two: the group of rank 0 is the reference. */
  reset(N);
  strcpy(w[2].module, "other");
  strcpy(w[3].module, "other");
  check("different_modules_tie", N, TS_HANG_CAUSE_DIFFERENT_MODULES, "2,3");

  /* fingerprint mismatch: same name, rank 1 compiled differently. */
  reset(N);
  w[1].fingerprint = 0x999;
  check("fingerprint_mismatch", N, TS_HANG_CAUSE_FINGERPRINT_MISMATCH, "1");

  /* data input stall: rank 2 waits for its batch, the others for rank 2. */
  reset(N);
  not_posted(2, TS_HANG_INPUT_WAIT);
  check("data_input_stall", N, TS_HANG_CAUSE_DATA_INPUT_STALL, "2");

  /* unrecoverable: rank 0 died; rank 3 failed only because of it. */
  reset(N);
  w[0].status = TS_HANG_WORKER_DEAD;
  failed(3, TS_ERR_REMOTE);
  check("unrecoverable_dead", N, TS_HANG_CAUSE_UNRECOVERABLE_ERROR, "0");

  /* unrecoverable: rank 1 failed with its own error. */
  reset(N);
  failed(1, TS_ERR_NOMEM);
  failed(2, TS_ERR_REMOTE);
  check("unrecoverable_failed", N, TS_HANG_CAUSE_UNRECOVERABLE_ERROR, "1");

  /* unrecoverable: only timeouts/remote errors: the timed-out one. */
  reset(N);
  failed(2, TS_ERR_TIMEOUT);
  failed(0, TS_ERR_REMOTE);
  check("unrecoverable_timeout", N, TS_HANG_CAUSE_UNRECOVERABLE_ERROR, "2");

  /* a worker that never connected. */
  reset(N);
  w[3].status = TS_HANG_WORKER_NEVER_CONNECTED;
  w[3].module[0] = '\0';
  check("never_connected", N, TS_HANG_CAUSE_UNRECOVERABLE_ERROR, "3");

  /* precedence: a death beats a module mismatch. */
  reset(N);
  strcpy(w[1].module, "other");
  w[2].status = TS_HANG_WORKER_DEAD;
  check("dead_before_modules", N, TS_HANG_CAUSE_UNRECOVERABLE_ERROR, "2");

  /* a worker that did not answer the state request is data, not a culprit. */
  reset(N);
  not_posted(1, TS_HANG_COMPUTE);
  w[3].status = TS_HANG_WORKER_NO_RESPONSE;
  check("no_response_is_not_culprit", N, TS_HANG_CAUSE_BAD_DEVICE, "1");

  /* kill -STOP of rank 2 mid-collective: its last heartbeat (stale) said it
   * waits on rank 1, and rank 1 waits on rank 2. Not a broken link: rank 2
   * alone stopped answering. (The old classifier said networking [1,2].) */
  reset(N);
  w[1].waiting_on = 2;
  w[2].waiting_on = 1;
  w[2].status = TS_HANG_WORKER_NO_RESPONSE;
  check("frozen_mid_collective", N, TS_HANG_CAUSE_BAD_DEVICE, "2");

  /* kill -STOP of rank 0 between steps: stale "idle" at step 2, every other
   * rank waits on it. (The old classifier said unknown.) */
  reset(N);
  not_posted(0, TS_HANG_IDLE);
  w[0].step = 2;
  w[0].status = TS_HANG_WORKER_NO_RESPONSE;
  for (int r = 1; r < N; r++) w[r].waiting_on = 0;
  check("frozen_between_steps", N, TS_HANG_CAUSE_BAD_DEVICE, "0");

  /* One rank is no longer reporting; the others wait in seq 9. */
  static const struct {
    const char *name;
    int rank;
    int activity; /* where the rank's last heartbeat says it is, when it has not posted seq 9; else -1 */
    ts_hang_worker_status_t status;
    ts_hang_cause_t cause;
    const char *culprits;
  } one_silent[] = {
      /* kill -STOP of the last rank, stale "collective" with no peer known. */
      {"frozen_last_rank", 3, -1, TS_HANG_WORKER_NO_RESPONSE, TS_HANG_CAUSE_BAD_DEVICE, "3"},
      /* a rank frozen after its last step: the others wait for it in the
       * output gather; its stale heartbeat says finished. */
      {"frozen_after_last_step", 1, TS_HANG_FINISHED, TS_HANG_WORKER_NO_RESPONSE, TS_HANG_CAUSE_BAD_DEVICE, "1"},
      /* kill -STOP of rank 2 while it waited for its input batch: stale
       * "input", the others wait in a collective. Frozen, not an input stall
       * (seen once in tests/faults before this case existed). */
      {"frozen_in_input", 2, TS_HANG_INPUT_WAIT, TS_HANG_WORKER_NO_RESPONSE, TS_HANG_CAUSE_BAD_DEVICE, "2"},
      /* a worker that left after the first event is a bystander, never the
       * frozen one. */
      {"left_is_not_frozen", 2, -1, TS_HANG_WORKER_LEFT, TS_HANG_CAUSE_UNKNOWN, ""},
  };
  for (size_t k = 0; k < sizeof one_silent / sizeof one_silent[0]; k++) {
    reset(N);
    if (one_silent[k].activity >= 0) not_posted(one_silent[k].rank, one_silent[k].activity);
    w[one_silent[k].rank].status = one_silent[k].status;
    check(one_silent[k].name, N, one_silent[k].cause, one_silent[k].culprits);
  }

  /* nobody answering but the silent one waits: nothing to tell apart. */
  reset(N);
  for (int r = 0; r < N; r++) w[r].status = TS_HANG_WORKER_NO_RESPONSE;
  check("all_silent", N, TS_HANG_CAUSE_UNKNOWN, "");

  /* names */
  ts_hang_cause_t c;
  EXPECT(ts_hang_cause_from_key("fingerprint_mismatch", &c) && c == TS_HANG_CAUSE_FINGERPRINT_MISMATCH);
  EXPECT(!ts_hang_cause_from_key("hung", &c));
  EXPECT_STREQ(ts_hang_cause_title(TS_HANG_CAUSE_NETWORKING), "Networking issue");
  return failures ? 1 : 0;
}
