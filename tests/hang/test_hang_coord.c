/* End-to-end test of the hang detector without mpirun: a real coordinator
 * process (this binary re-executed as `hang-coordinator`, as tessera does)
 * and N forked fake workers running a step loop of 8 instructions whose
 * 5th is a collective (a shared-memory barrier), with the real heartbeat
 * client and the real TESSERA_FAULT hook. Checks the digest's cause and
 * culprits, that it came within timeout + 2 s of the fault, the text on
 * the coordinator's stderr, abort delivery (every surviving worker exits
 * 42 from its abort callback), and that no process is left.
 *
 *   test_hang_coord FAULT CAUSE CULPRITS [--steps N] [--no-abort]
 *   CAUSE: a JSON cause key, or "none" (no digest may be written; every
 *   worker must finish); CULPRITS: comma-separated ranks, or "-" for none.
 *   --straggler R: also expect a straggler line naming rank R.
 *   --cancel-race: stop the job as mpirun does when its user cancels it:
 *   SIGTERM (from this process, the workers' launcher) to every rank but 2,
 *   then, once they are gone, SIGKILL to rank 2; CAUSE must be "cancelled"
 *   (no digest, coordinator exit 5). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ts_hang.h"
#include "ts_test.h"

#define NW 4
#define NINSTR 8
#define COLL_INSTR 4
#define TIMEOUT_S 1.5

typedef struct {
  _Atomic int arrived[256];   /* per step: ranks at the collective */
  _Atomic uint64_t fired_ns;  /* first fault that began (CLOCK_MONOTONIC) */
} shared_t;

static shared_t *sh;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(((long)(ms * 1e6)) % 1000000000L)};
  nanosleep(&ts, NULL);
}

static ts_hang_fault_hook_t hook;
static _Atomic int aborted;

static void on_abort(void *arg, const char *reason) {
  (void)arg;
  (void)reason;
  atomic_store(&aborted, 1);
  ts_hang_fault_hook_abort(&hook);
}

static const char *const names[NINSTR] = {"param.0", "dot.1", "add.2", "tanh.3", "all-reduce.4",
                                          "multiply.5", "subtract.6", "copy.7"};

/* One fake worker: the launcher's sequence from ts_hang.h, steps of 8
 * instructions of ~2 ms with a barrier as the collective. */
static int worker(int rank, const char *addr, const char *secret, const ts_hang_fault_t *fault, int steps,
                  const char *strag_path) {
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "jit_train_step", 0x1234abcd5678ef00ull, 7, rank, NW);
  p.instr_names = names;
  p.ninstrs = NINSTR;
  ts_hang_fault_identity(fault, &p);
  ts_hang_fault_hook_init(&hook, fault, rank, &p);
  bool *is = ts_calloc(NINSTR, sizeof *is);
  is[COLL_INSTR] = true;
  hook.is_collective = is;
  hook.ninstrs = NINSTR;

  ts_hang_worker_opts_t o;
  ts_hang_worker_opts_default(&o);
  o.addr = addr;
  o.secret = secret;
  o.progress = &p;
  o.period_s = 0.1;
  o.connect_timeout_s = 10;
  o.on_abort = on_abort;
  o.abort_exit_s = 5;
  o.abort_exit_code = 43;
  ts_diag_t diag = {0};
  ts_hang_worker_t *w;
  if (ts_hang_worker_start(&o, &w, &diag) != TS_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, diag.text);
    return 3;
  }
  ts_status_t st = TS_OK;
  for (int64_t step = 1; step <= steps && st == TS_OK; step++) {
    uint64_t t0 = now_ns(), coll_ns = 0;
    st = ts_hang_fault_before_input(&hook, step);
    if (st != TS_OK) break;
    atomic_store(&p.step, step);
    for (int i = 0; i < NINSTR && st == TS_OK; i++) {
      atomic_store(&p.instr, i);
      st = ts_hang_fault_hook(&hook, step, i);
      if (st != TS_OK) break;
      if (hook.t_fired > 0) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&sh->fired_ns, &zero, (uint64_t)(hook.t_fired * 1e9));
      }
      if (i == COLL_INSTR) {
        uint64_t c0 = now_ns();
        atomic_store(&p.activity, TS_HANG_COLLECTIVE);
        atomic_fetch_add(&sh->arrived[step], 1);
        while (atomic_load(&sh->arrived[step]) < NW && !atomic_load(&aborted)) nap_ms(0.2);
        if (atomic_load(&aborted)) st = TS_ERR_REMOTE;
        coll_ns = now_ns() - c0;
      } else {
        atomic_store(&p.activity, TS_HANG_COMPUTE);
        nap_ms(2);
      }
      atomic_fetch_add(&p.progress, 1);
      atomic_store(&p.t_progress_ns, now_ns());
    }
    if (st != TS_OK) break;
    uint64_t total = now_ns() - t0;
    atomic_store(&p.last_step_ns, total);
    atomic_store(&p.last_collective_ns, coll_ns);
    atomic_store(&p.last_compute_ns, total - coll_ns);
    atomic_store(&p.activity, TS_HANG_IDLE);
  }
  if (hook.t_fired > 0) {
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&sh->fired_ns, &zero, (uint64_t)(hook.t_fired * 1e9));
  }
  if (st != TS_OK) {
    atomic_store(&p.error, st);
    atomic_store(&p.activity, TS_HANG_FAILED);
  } else {
    atomic_store(&p.activity, TS_HANG_FINISHED);
  }
  ts_hang_worker_stop(w, 3.0);
  if (strag_path && rank == 0) {
    FILE *f = fopen(strag_path, "w");
    if (f) {
      fputs(ts_hang_worker_stragglers(w), f);
      fclose(f);
    }
  }
  bool ab = ts_hang_worker_aborted(w, NULL, 0);
  ts_hang_worker_destroy(w);
  ts_hang_fault_hook_fini(&hook);
  return ab ? 42 : st == TS_OK ? 0 : 5;
}

static char *slurp(const char *path) {
  char *text = NULL;
  size_t len;
  ts_diag_t d = {0};
  if (ts_read_file(path, &text, &len, &d) != TS_OK) text = NULL;
  ts_diag_free(&d);
  return text;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "hang-coordinator")) return ts_hang_coordinator_main(argc - 1, argv + 1);
  if (argc < 4) {
    fprintf(stderr, "usage: test_hang_coord FAULT CAUSE CULPRITS [--steps N] [--no-abort] [--straggler R]\n");
    return 2;
  }
  const char *spec = argv[1], *want_cause = argv[2], *want_culprits = argv[3];
  int steps = 6, straggler = -1;
  bool abort_on_hang = true, terminated = false, cancel_race = false;
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-abort"))
      abort_on_hang = false;
    else if (!strcmp(argv[i], "--cancel-race"))
      cancel_race = true;
    else if (!strcmp(argv[i], "--straggler") && i + 1 < argc)
      straggler = atoi(argv[++i]);
  }
  ts_hang_fault_t fault;
  ts_diag_t diag = {0};
  if (ts_hang_fault_parse(!strcmp(spec, "none") ? "" : spec, &fault, &diag) != TS_OK) {
    fprintf(stderr, "%s\n", diag.text);
    return 2;
  }
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;

  char dir[] = "/tmp/test_hang_coord.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char digest[256], errlog[256], strag[256];
  snprintf(digest, sizeof digest, "%s/digest.json", dir);
  snprintf(errlog, sizeof errlog, "%s/coordinator.stderr", dir);
  snprintf(strag, sizeof strag, "%s/stragglers.txt", dir);

  char secret[33];
  EXPECT_EQ(ts_hang_secret_generate(secret), TS_OK);
  ts_hang_coord_opts_t co;
  ts_hang_coord_opts_default(&co);
  co.world = NW;
  co.secret = secret;
  co.hang_timeout_s = TIMEOUT_S;
  co.gather_timeout_s = 1;
  co.connect_timeout_s = 20;
  co.digest_path = digest;
  co.abort_on_hang = abort_on_hang;
  char addr[160];
  pid_t cpid;
  /* The coordinator's stderr goes to a file (the digest text is checked). */
  fflush(stderr);
  int saved = dup(2), efd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(efd, 2);
  ts_status_t st = ts_hang_coordinator_spawn(&co, NULL, addr, sizeof addr, &cpid, &diag);
  dup2(saved, 2);
  close(saved);
  close(efd);
  if (st != TS_OK) {
    fprintf(stderr, "spawn: %s\n", diag.text);
    return 1;
  }
  printf("coordinator pid %d at %s\n", (int)cpid, addr);

  pid_t pids[NW];
  for (int r = 0; r < NW; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(worker(r, addr, secret, &fault, steps, strag));
  }
  /* Watch for the digest while the workers run. */
  uint64_t t_digest = 0;
  int status[NW], left = NW;
  bool reaped[NW] = {false};
  uint64_t t_end = now_ns() + 60ull * 1000000000u;
  while ((left > 0 || !t_digest) && now_ns() < t_end) {
    struct stat sb;
    if (!t_digest && stat(digest, &sb) == 0) t_digest = now_ns();
    for (int r = 0; r < NW; r++)
      if (!reaped[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
        reaped[r] = true;
        left--;
      }
    if (left == 0 && (!strcmp(want_cause, "none") || !strcmp(want_cause, "cancelled"))) break;
    if (cancel_race && !terminated && atomic_load(&sh->arrived[2]) == NW) {
      /* Every rank runs steps: the launcher stops the job, the last rank
       * it gets to dies without a word (SIGKILL) after the others said
       * CANCEL and went. */
      for (int r = 0; r < NW; r++)
        if (r != 2) kill(pids[r], SIGTERM);
      uint64_t until = now_ns() + 10ull * 1000000000u;
      while (left > 1 && now_ns() < until) {
        for (int r = 0; r < NW; r++)
          if (r != 2 && !reaped[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
            reaped[r] = true;
            left--;
          }
        nap_ms(5);
      }
      nap_ms(100); /* the coordinator reads their CANCEL and their end first */
      kill(pids[2], SIGKILL);
      terminated = true;
    }
    if (left == 0 && t_digest) break;
    nap_ms(5);
    if (!abort_on_hang && !terminated && t_digest && left > 0) {
      /* Inspection mode: the workers are still alive and were not told to
       * abort; end them as a user would, after checking they still run. */
      for (int r = 0; r < NW; r++)
        if (!reaped[r]) {
          EXPECT_EQ(kill(pids[r], 0), 0);
          kill(pids[r], SIGTERM);
        }
      terminated = true;
    }
  }
  int ccode = -1;
  EXPECT_EQ(ts_hang_coordinator_wait(cpid, 15, &ccode), TS_OK);
  for (int r = 0; r < NW; r++) {
    if (!reaped[r]) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status[r], 0);
      fprintf(stderr, "FAIL: rank %d did not exit\n", r);
      failures++;
      reaped[r] = true;
    }
  }
  /* No orphans: every process this test started is gone. */
  EXPECT(kill(cpid, 0) == -1 && errno == ESRCH);
  for (int r = 0; r < NW; r++) EXPECT(kill(pids[r], 0) == -1 && errno == ESRCH);

  char *errtext = slurp(errlog);
  printf("---- coordinator stderr ----\n%s----\n", errtext ? errtext : "(none)");

  if (!strcmp(want_cause, "cancelled")) {
    struct stat sb;
    EXPECT(stat(digest, &sb) != 0); /* a cancel names no culprit */
    EXPECT_EQ(ccode, 5);
    for (int r = 0; r < NW; r++)
      EXPECT(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == (r == 2 ? SIGKILL : SIGTERM));
  } else if (!strcmp(want_cause, "none")) {
    struct stat sb;
    EXPECT(stat(digest, &sb) != 0); /* no false positive */
    EXPECT_EQ(ccode, 0);
    for (int r = 0; r < NW; r++) EXPECT(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0);
  } else {
    EXPECT(t_digest != 0);
    EXPECT_EQ(ccode, 1);
    uint64_t fired = atomic_load(&sh->fired_ns);
    if (fault.kind != TS_HANG_FAULT_CRASH && t_digest && fired) {
      double s = (double)(t_digest - fired) * 1e-9;
      printf("fault to digest: %.2f s (hang timeout %.1f s)\n", s, TIMEOUT_S);
      EXPECT(s <= TIMEOUT_S + 2.0);
    }
    char *json = slurp(digest);
    EXPECT(json != NULL);
    ts_hang_digest_t d;
    if (json && ts_hang_digest_parse_json(json, strlen(json), digest, &d, &diag) == TS_OK) {
      printf("cause %s, culprits:", ts_hang_cause_key(d.verdict.cause));
      char got[256] = "";
      for (int i = 0; i < d.verdict.nculprits; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", i ? "," : "", d.verdict.culprits[i]);
      printf(" %s\n", got[0] ? got : "-");
      EXPECT_STREQ(ts_hang_cause_key(d.verdict.cause), want_cause);
      EXPECT_STREQ(got[0] ? got : "-", want_culprits);
      EXPECT_EQ(d.nworkers, NW);
      EXPECT(d.first_error_timestamp[0] != '\0');
      EXPECT(d.first_error_type[0] != '\0');
      /* The same verdict in the text on stderr. */
      char line[128];
      snprintf(line, sizeof line, "Potential cause: %s\n", ts_hang_cause_title(d.verdict.cause));
      EXPECT(errtext && strstr(errtext, line));
      EXPECT(errtext && strstr(errtext, "Potential culprit workers: "));
      EXPECT(errtext && strstr(errtext, "First error timestamp: "));
      ts_hang_digest_free(&d);
    } else {
      fprintf(stderr, "FAIL: digest: %s\n", diag.text ? diag.text : "(missing)");
      failures++;
    }
    ts_free(json);
    /* Abort delivery: every worker that did not crash left through its abort callback. */
    for (int r = 0; r < NW; r++) {
      if (fault.kind == TS_HANG_FAULT_CRASH && ts_hang_fault_hits(&fault, r)) {
        EXPECT(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL);
      } else if (terminated) {
        /* --no-abort: alive until the test ended them (not told to abort). */
        EXPECT(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGTERM);
      } else {
        if (!(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 42)) {
          fprintf(stderr, "FAIL: rank %d exit status %d (want 42: aborted)\n", r, status[r]);
          failures++;
        }
      }
    }
  }
  if (straggler >= 0) {
    char *text = slurp(strag);
    char want[64];
    snprintf(want, sizeof want, "straggler: rank %d ", straggler);
    printf("straggler lines at rank 0: %s", text ? text : "(none)\n");
    EXPECT(text && strstr(text, want));
    EXPECT(errtext && strstr(errtext, want));
    ts_free(text);
  }
  ts_free(errtext);
  unlink(digest);
  unlink(errlog);
  unlink(strag);
  rmdir(dir);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
