/* Digests: the text in megascale.md's shape (checked line by line against
 * a hand-written expectation), the JSON keys, JSON read back giving the
 * same text, and the straggler tracker (a slow rank named, a rank with one
 * slow step or a uniformly slow job not). */
#include <string.h>

#include "ts_coll.h"
#include "ts_hang.h"
#include "ts_test.h"

static void fill(ts_hang_state_t *w, int n) {
  memset(w, 0, sizeof *w * (size_t)n);
  for (int r = 0; r < n; r++) {
    w[r].rank = r;
    w[r].size = n;
    w[r].pid = 100 + r;
    snprintf(w[r].host, sizeof w[r].host, "node%d", r / 2);
    strcpy(w[r].module, "jit_train_step");
    w[r].fingerprint = 0x1234;
    w[r].launch_id = 7;
    w[r].step = 3;
    w[r].activity = TS_HANG_COLLECTIVE;
    strcpy(w[r].instr_name, "all-reduce.4");
    w[r].waiting_on = -1;
    w[r].status = TS_HANG_WORKER_OK;
    w[r].event_time = 1767225600.0 + r; /* 2026-01-01T00:00:00Z + r */
    w[r].ncolls = 1;
    w[r].colls[0] = (ts_hang_coll_t){1, 9, TS_COLL_ALL_REDUCE, TS_COLL_STARTED, 0, -1, 1, 64, 5, 5, -1};
  }
  w[1].activity = TS_HANG_COMPUTE;
  strcpy(w[1].instr_name, "fusion.2");
  w[1].ncolls = 0;
}

static const char expected[] =
    "Tessera detects a hang that is likely caused by bad devices on the following hosts. Please remove the hosts "
    "from the fleet and restart the workload.\n"
    "  The hosts that have bad devices are: node0\n"
    "  Full error digest:\n"
    "    Potential cause: Bad device\n"
    "    Potential culprit workers: rank 1:node0\n"
    "    First error timestamp: 2026-01-01T00:00:01.000Z\n"
    "    First error type: hang: no worker made progress for 61.0 s (hang timeout 60 s)\n"
    "    Evidence: rank 1 stuck in compute at fusion.2 (step 3) while 3 worker(s) wait\n"
    "    Worker states:\n"
    "      Launch ID: 7\n"
    "      Module: jit_train_step Fingerprint: 0000000000001234\n"
    "        Sample worker: rank 0@node0\n"
    "      Step:instruction breakdown:\n"
    "        1@step 3:compute(fusion.2): [rank 1:node0]\n"
    "        3@step 3:collective(all-reduce.4) seq 9 all-reduce waiting on rank 1: [rank 0:node0, rank 2:node1, "
    "rank 3:node1]\n"
    "    Stragglers:\n"
    "      Tessera detects a straggler: rank 1 ...\n";

/* The flight recorder through JSON and `diagnose --collectives`: ranks 0,
 * 1 and 3 posted all-reduce seq 11 of group 1 and wait on rank 2, which
 * completed seq 10 and never posted 11; rank 3 ran seq 5 as an all-gather
 * (a code-path divergence). Expected lines worked out by hand. */
static void flight(void) {
  ts_hang_state_t *w = ts_calloc(4, sizeof *w);
  fill(w, 4);
  for (int r = 0; r < 4; r++) {
    w[r].nflight = 0;
    for (uint64_t s = 1; s <= 10; s++)
      w[r].flight[w[r].nflight++] = (ts_hang_coll_t){1, s, TS_COLL_ALL_REDUCE, TS_COLL_COMPLETED, 0, -1, -1, 64,
                                                      20.0 - (double)s, 20.0 - (double)s, 19.5 - (double)s};
    if (r != 2)
      w[r].flight[w[r].nflight++] =
          (ts_hang_coll_t){1, 11, TS_COLL_ALL_REDUCE, TS_COLL_STARTED, 0, -1, 2, 64, 5, 5, -1};
  }
  w[3].flight[4].kind = TS_COLL_ALL_GATHER;
  ts_hang_digest_t d;
  memset(&d, 0, sizeof d);
  d.nworkers = 4;
  d.workers = w;
  EXPECT_EQ(ts_hang_classify(d.workers, 4, &d.verdict), TS_OK);
  char *json = NULL;
  EXPECT(ts_hang_digest_json(&d, &json) == TS_OK && json && strstr(json, "\"flight\":"));
  ts_hang_digest_t back;
  ts_diag_t diag = {0};
  EXPECT(json && ts_hang_digest_parse_json(json, strlen(json), "f.json", &back, &diag) == TS_OK);
  if (!diag.text) {
    EXPECT(back.workers[0].nflight == 11 && back.workers[2].nflight == 10 && back.workers[1].flight[10].seq == 11 &&
           back.workers[1].flight[10].waiting_on == 2);
    ts_buf_t t = {0};
    ts_hang_digest_collectives(&back, &t);
    printf("%s", t.data ? t.data : "");
    EXPECT(t.data && strstr(t.data, "    rank 2: completed through seq 10, newest seq 10\n"));
    EXPECT(t.data && strstr(t.data, "    rank 1: completed through seq 10, newest seq 11, seq 11 all-reduce started "
                                    "waiting on rank 2\n"));
    EXPECT(t.data && strstr(t.data, "    MISMATCH at seq 5: rank 0 all-reduce 64 bytes, rank 3 all-gather 64 bytes\n"));
    EXPECT(t.data && strstr(t.data, "    ranks diverge at seq 11 (all-reduce):\n"
                                    "      posted it, not completed: 0 1 3\n"
                                    "      never posted it (the laggards): 2\n"));
    ts_buf_free(&t);
    ts_hang_digest_free(&back);
  }
  ts_diag_free(&diag);
  ts_free(json);
  ts_hang_digest_free(&d);
}

int main(void) {
  flight();
  ts_hang_state_t w[4];
  fill(w, 4);
  ts_hang_digest_t d;
  memset(&d, 0, sizeof d);
  d.nworkers = 4;
  d.workers = ts_malloc(sizeof w);
  memcpy(d.workers, w, sizeof w);
  EXPECT_EQ(ts_hang_classify(d.workers, 4, &d.verdict), TS_OK);
  EXPECT(d.verdict.cause == TS_HANG_CAUSE_BAD_DEVICE && d.verdict.first_error_rank == 1);
  ts_hang_format_time(d.workers[1].event_time, d.first_error_timestamp, sizeof d.first_error_timestamp);
  strcpy(d.first_error_type, "hang: no worker made progress for 61.0 s (hang timeout 60 s)");
  d.hang_timeout_s = 60;
  d.stragglers = ts_strdup("Tessera detects a straggler: rank 1 ...\n");

  ts_buf_t t = {0};
  ts_hang_digest_text(&d, &t);
  if (!t.data || strcmp(t.data, expected)) {
    fprintf(stderr, "FAIL: text differs:\n--- got\n%s--- want\n%s", t.data ? t.data : "", expected);
    failures++;
  }

  char *json = NULL;
  EXPECT(ts_hang_digest_json(&d, &json) == TS_OK && json);
  EXPECT(json && strstr(json, "\"cause\":\t\"bad_device\""));
  EXPECT(json && strstr(json, "\"culprits\":\t[{\n\t\t\t\"rank\":\t1,\n\t\t\t\"host\":\t\"node0\""));
  EXPECT(json && strstr(json, "\"first_error_timestamp\":\t\"2026-01-01T00:00:01.000Z\""));
  EXPECT(json && strstr(json, "\"first_error_type\":\t\"hang: no worker"));
  EXPECT(json && strstr(json, "\"workers\":\t[{"));
  ts_hang_digest_t back;
  ts_diag_t diag = {0};
  EXPECT(json && ts_hang_digest_parse_json(json, strlen(json), "mem.json", &back, &diag) == TS_OK);
  if (!diag.text) {
    ts_buf_t t2 = {0};
    ts_hang_digest_text(&back, &t2);
    EXPECT(t2.data && t.data && !strcmp(t2.data, t.data));
    EXPECT(back.nworkers == 4 && back.workers[0].colls[0].seq == 9 && back.workers[3].pid == 103);
    ts_buf_free(&t2);
    ts_hang_digest_free(&back);
  }
  ts_diag_free(&diag);
  /* Broken JSON is one located error, no crash. */
  EXPECT_EQ(ts_hang_digest_parse_json("{\"cause\": 3}", 12, "x.json", &back, &diag), TS_ERR_PARSE);
  EXPECT(diag.text && strstr(diag.text, "x.json: error: digest: 'cause' missing or not a string"));
  ts_diag_free(&diag);
  EXPECT_EQ(ts_hang_digest_parse_json("[1,2", 4, "y.json", &back, &diag), TS_ERR_PARSE);
  ts_diag_free(&diag);
  if (json) {
    char *cut = ts_strdup(json);
    char *p = strstr(cut, "\"rank\":\t1,");
    if (p) memcpy(p, "\"rank\":\t9,", 10); /* a culprit naming no worker */
    EXPECT_EQ(ts_hang_digest_parse_json(cut, strlen(cut), "z.json", &back, &diag), TS_ERR_PARSE);
    ts_diag_free(&diag);
    ts_free(cut);
  }
  ts_free(json);
  ts_buf_free(&t);
  ts_hang_digest_free(&d);

  /* Unrecoverable error text. */
  fill(w, 4);
  w[0].status = TS_HANG_WORKER_DEAD;
  strcpy(w[0].note, "connection lost");
  memset(&d, 0, sizeof d);
  d.nworkers = 4;
  d.workers = ts_malloc(sizeof w);
  memcpy(d.workers, w, sizeof w);
  EXPECT_EQ(ts_hang_classify(d.workers, 4, &d.verdict), TS_OK);
  ts_buf_t u = {0};
  ts_hang_digest_text(&d, &u);
  static const char want_u[] = "Some workers have halted with an unrecoverable error:\n"
                               "  rank 0:node0 : dead (connection lost)\n"
                               "  Please inspect the error log of these workers:\n"
                               "  rank 0:node0\n"
                               "  Full error digest:\n"
                               "    Potential cause: Unrecoverable error\n"
                               "    Potential culprit workers: rank 0:node0\n";
  EXPECT(u.data && !strncmp(u.data, want_u, strlen(want_u)));
  EXPECT(u.data && strstr(u.data, "        1@dead (connection lost): [rank 0:node0]\n"));
  ts_buf_free(&u);
  ts_hang_digest_free(&d);

  /* Stragglers: rank 2 busy 30 ms per step, the others 10 ms (waiting 20 ms). */
  ts_hang_stragglers_t *s;
  EXPECT_EQ(ts_hang_stragglers_create(4, 1.5, 0.002, &s), TS_OK);
  ts_buf_t b = {0};
  for (int step = 1; step <= 2; step++)
    for (int r = 0; r < 4; r++)
      ts_hang_stragglers_add(s, r, r < 2 ? "a" : "b", step, 40000000, 0, r == 2 ? 10000000 : 30000000);
  EXPECT_EQ(ts_hang_stragglers_report(s, &b), 0); /* two samples are not "consistently" */
  ts_hang_stragglers_add(s, 0, "a", 2, 40000000, 0, 0); /* an old step again: ignored */
  for (int r = 0; r < 4; r++) ts_hang_stragglers_add(s, r, r < 2 ? "a" : "b", 3, 40000000, 0, r == 2 ? 10000000 : 30000000);
  EXPECT_EQ(ts_hang_stragglers_report(s, &b), 1);
  EXPECT(b.data && strstr(b.data, "Tessera detects a straggler: rank 2 on host b is consistently slower than its "
                                  "peers: busy 30.0 ms per step vs 10.0 ms (median of the others, 3.0x)"));
  EXPECT(b.data && !strstr(b.data, "straggler host")); /* rank 3 on host b is fine */
  ts_hang_stragglers_destroy(s);
  ts_buf_free(&b);

  /* One slow step among fast ones, and a uniformly slow job: no straggler. */
  EXPECT_EQ(ts_hang_stragglers_create(4, 1.5, 0.002, &s), TS_OK);
  for (int step = 1; step <= 6; step++)
    for (int r = 0; r < 4; r++)
      ts_hang_stragglers_add(s, r, "a", step, 100000000, 0, (r == 1 && step == 4) ? 0 : 90000000);
  EXPECT_EQ(ts_hang_stragglers_report(s, &b), 0);
  ts_hang_stragglers_destroy(s);
  /* A whole host slow. */
  EXPECT_EQ(ts_hang_stragglers_create(4, 1.5, 0.002, &s), TS_OK);
  for (int step = 1; step <= 4; step++)
    for (int r = 0; r < 4; r++) ts_hang_stragglers_add(s, r, r < 2 ? "a" : "b", step, 50000000, 0, r >= 2 ? 0 : 40000000);
  EXPECT_EQ(ts_hang_stragglers_report(s, &b), 2);
  EXPECT(b.data && strstr(b.data, "Tessera detects a straggler host: b (every worker on it is slow)"));
  ts_hang_stragglers_destroy(s);
  ts_buf_free(&b);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
