/* The worker side: a heartbeat thread that reports this rank's progress
 * record to the coordinator every period, answers its out-of-band state
 * requests at once (it never waits on the main thread, which may be stuck
 * in a kernel or a collective), and runs the abort callback when told to. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hang_internal.h"
#include "ts_coll.h"
#include "ts_env.h"

struct ts_hang_worker {
  ts_hang_worker_opts_t o;
  char addr[128];
  char secret[TS_HANG_SECRET_MAX + 1];
  ts_hang_progress_t *p;
  int fd;          /* -1 once the connection is gone */
  int wake[2];     /* stop() writes a byte: the thread leaves poll at once */
  pthread_t thread;
  bool running, stopped;
  double stop_deadline;
  _Atomic int stop_req;
  _Atomic int aborted;
  _Atomic int connected;
  char abort_reason[TS_HANG_TEXT_MAX]; /* written before `aborted` is set (release) */
  pthread_mutex_t mu;
  char stragglers[TS_HANG_TEXT_MAX]; /* under mu */
  char stragglers_copy[TS_HANG_TEXT_MAX];
  bool got_ack;
  bool cancel_told;  /* the CANCEL for the process's termination signal went out */
  ts_hang_rbuf_t rb;
};

/* ---- cancellation ----------------------------------------------------------
 * SIGINT/SIGTERM/SIGHUP while workers run: before the process dies, each
 * heartbeat thread tells the coordinator who sent the signal (CANCEL), so
 * that a job stopped by its user (the signal came from the launcher, the
 * terminal, or the single process that holds every rank) is not diagnosed
 * as a rank's death. Then the signal's old disposition is restored and it
 * is raised again. Installed only over SIG_DFL: a program's own handlers
 * win. Process-wide (a --devices job has one worker per device). */

static const int cancel_sigs[] = {SIGINT, SIGTERM, SIGHUP};
#define NCANCEL_SIGS 3
static pthread_mutex_t cancel_mu = PTHREAD_MUTEX_INITIALIZER;
static int cancel_users;                    /* running heartbeat threads, under cancel_mu */
static bool cancel_installed[NCANCEL_SIGS]; /* under cancel_mu */
static int cancel_pipe[2] = {-1, -1};       /* the handler writes a byte; never read: stays readable */
static _Atomic int cancel_signo, cancel_sender, cancel_code, cancel_parent;
static _Atomic int cancel_running; /* heartbeat threads that may still tell */
static _Atomic int cancel_told;    /* of those, how many told */

static void reraise(int sig) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
  sigset_t m;
  sigemptyset(&m);
  sigaddset(&m, sig);
  pthread_sigmask(SIG_UNBLOCK, &m, NULL);
  kill(getpid(), sig);
}

static void cancel_handler(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int zero = 0;
  if (!atomic_compare_exchange_strong(&cancel_signo, &zero, sig)) return; /* one is being told already */
  atomic_store(&cancel_sender, si ? (int)si->si_pid : 0);
  atomic_store(&cancel_code, si ? si->si_code : 0);
  atomic_store(&cancel_parent, (int)getppid());
  if (atomic_load(&cancel_running) == 0 || cancel_pipe[1] < 0) {
    reraise(sig);
    return;
  }
  char b = 1;
  if (write(cancel_pipe[1], &b, 1) < 0) reraise(sig);
}

/* Adds a running heartbeat thread to the cancellation handling. */
static void cancel_join(void) {
  pthread_mutex_lock(&cancel_mu);
  if (cancel_pipe[0] < 0 && pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) != 0) cancel_pipe[0] = cancel_pipe[1] = -1;
  if (cancel_users++ == 0 && cancel_pipe[0] >= 0) {
    for (int i = 0; i < NCANCEL_SIGS; i++) {
      struct sigaction old, sa;
      if (sigaction(cancel_sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        continue;
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = cancel_handler;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigfillset(&sa.sa_mask);
      cancel_installed[i] = sigaction(cancel_sigs[i], &sa, NULL) == 0;
    }
  }
  atomic_fetch_add(&cancel_running, 1);
  pthread_mutex_unlock(&cancel_mu);
}

static void cancel_leave(bool told) {
  pthread_mutex_lock(&cancel_mu);
  atomic_fetch_sub(&cancel_running, 1);
  if (told) atomic_fetch_sub(&cancel_told, 1);
  if (--cancel_users == 0 && atomic_load(&cancel_signo) == 0) {
    for (int i = 0; i < NCANCEL_SIGS; i++) {
      if (!cancel_installed[i]) continue;
      struct sigaction dfl;
      memset(&dfl, 0, sizeof dfl);
      dfl.sa_handler = SIG_DFL;
      sigaction(cancel_sigs[i], &dfl, NULL);
      cancel_installed[i] = false;
    }
  }
  pthread_mutex_unlock(&cancel_mu);
}

/* What the CANCEL says: "SIGTERM from pid 123 (the launcher)"; the flag
 * (the text's first character, 'L' or 'O') says whether the sender is the
 * launcher or the terminal ('L') or another process ('O'). */
static void cancel_text(char *buf, size_t n) {
  int sig = atomic_load(&cancel_signo), pid = atomic_load(&cancel_sender), code = atomic_load(&cancel_code);
  int parent = atomic_load(&cancel_parent);
  bool terminal = code == SI_KERNEL || (code <= 0 && pid == 0 && code != SI_USER);
  bool launcher = terminal || (pid > 0 && pid == parent);
  snprintf(buf, n, "%c%s from %s %d%s", launcher ? 'L' : 'O',
           sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP",
           terminal ? "the terminal, code" : "pid", terminal ? code : pid,
           launcher && !terminal ? " (the launcher)" : "");
}

void ts_hang_worker_opts_default(ts_hang_worker_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->period_s = 1.0;
  o->connect_timeout_s = 30.0;
  o->abort_exit_s = 10.0;
  o->abort_exit_code = 4;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ts_hang_host_name(int rank, char *buf, size_t n) {
  const char *list = ts_env_get(TS_ENV_HOSTS);
  if (list && *list && rank >= 0) {
    const char *p = list;
    for (int i = 0; i < rank && p; i++) {
      p = strchr(p, ',');
      if (p) p++;
    }
    if (p && *p && *p != ',') {
      size_t l = strcspn(p, ",");
      if (l >= n) l = n - 1;
      memcpy(buf, p, l);
      buf[l] = '\0';
      return;
    }
  }
  if (gethostname(buf, n) != 0) ts_hang_strlcpy(buf, "localhost", n);
  buf[n - 1] = '\0';
}

void ts_hang_identity_fill(ts_hang_progress_t *p, const char *module_name, uint64_t fingerprint, uint64_t launch_id,
                           int rank, int size) {
  ts_hang_strlcpy(p->module_name, module_name ? module_name : "", sizeof p->module_name);
  p->fingerprint = fingerprint;
  p->launch_id = launch_id;
  p->rank = rank;
  p->size = size;
  ts_hang_host_name(rank, p->host, sizeof p->host);
  atomic_store_explicit(&p->activity, TS_HANG_IDLE, memory_order_relaxed);
  atomic_store_explicit(&p->step, 0, memory_order_relaxed);
  atomic_store_explicit(&p->instr, -1, memory_order_relaxed);
  atomic_store_explicit(&p->waiting_on1, 0, memory_order_relaxed);
  atomic_store_explicit(&p->t_progress_ns, mono_ns(), memory_order_relaxed);
}

/* ---- snapshot ------------------------------------------------------------ */

static double age_of(double now, double t) {
  if (t <= 0) return -1.0;
  return now > t ? now - t : 0.0;
}

static void fill_coll(ts_hang_coll_t *o, const ts_coll_record_t *r, uint32_t ctx, double now) {
  o->comm = ctx;
  o->seq = r->seq;
  o->kind = (int32_t)r->kind;
  o->state = (int32_t)r->state;
  o->status = r->status > 0 ? 0 : (int32_t)r->status;
  o->peer = r->peer < -1 ? -1 : r->peer;
  o->waiting_on = r->waiting_on < -1 ? -1 : r->waiting_on;
  o->bytes = r->bytes;
  o->age_posted_s = age_of(now, r->t_posted);
  o->age_started_s = age_of(now, r->t_started);
  o->age_completed_s = age_of(now, r->t_completed);
}

/* The collectives worth sending: every unfinished record (newest first,
 * across communicators), then the newest finished one of each
 * communicator, at most TS_HANG_COLLS. */
static void snapshot_colls(const ts_hang_progress_t *p, ts_hang_state_t *s) {
  enum { PER_COMM = 16 };
  ts_coll_record_t recs[PER_COMM];
  double now = ts_coll_now();
  s->ncolls = 0;
  if (!p->comms) return;
  for (int pass = 0; pass < 2; pass++) {
    for (int c = 0; c < p->ncomms && s->ncolls < TS_HANG_COLLS; c++) {
      const struct ts_coll_comm *comm = p->comms[c];
      if (!comm) continue;
      size_t n = ts_coll_records(comm, recs, PER_COMM);
      uint32_t ctx = ts_coll_comm_context(comm);
      for (size_t i = n; i-- > 0 && s->ncolls < TS_HANG_COLLS;) {
        bool done = recs[i].state == TS_COLL_COMPLETED || recs[i].state == TS_COLL_FAILED;
        if (pass == 0 && !done) fill_coll(&s->colls[s->ncolls++], &recs[i], ctx, now);
        if (pass == 1 && done) {
          fill_coll(&s->colls[s->ncolls++], &recs[i], ctx, now);
          break;
        }
      }
    }
  }
}

/* The newest TS_HANG_FLIGHT records over every communicator, oldest first. */
static void snapshot_flight(const ts_hang_progress_t *p, ts_hang_state_t *s) {
  static _Thread_local ts_coll_record_t recs[TS_HANG_FLIGHT];
  double now = ts_coll_now();
  s->nflight = 0;
  if (!p->comms) return;
  for (int c = 0; c < p->ncomms; c++) {
    const struct ts_coll_comm *comm = p->comms[c];
    if (!comm) continue;
    size_t n = ts_coll_records(comm, recs, TS_HANG_FLIGHT);
    uint32_t ctx = ts_coll_comm_context(comm);
    for (size_t i = 0; i < n; i++) {
      /* Keep the newest by post time: replace the oldest when full. */
      int slot = s->nflight;
      if (slot == TS_HANG_FLIGHT) {
        slot = 0;
        for (int k = 1; k < TS_HANG_FLIGHT; k++)
          if (s->flight[k].age_posted_s > s->flight[slot].age_posted_s) slot = k;
        if (age_of(now, recs[i].t_posted) >= s->flight[slot].age_posted_s) continue;
      } else {
        s->nflight++;
      }
      fill_coll(&s->flight[slot], &recs[i], ctx, now);
    }
  }
  /* Oldest first (insertion sort on the age, descending). */
  for (int i = 1; i < s->nflight; i++) {
    ts_hang_coll_t t = s->flight[i];
    int k = i;
    while (k > 0 && s->flight[k - 1].age_posted_s < t.age_posted_s) {
      s->flight[k] = s->flight[k - 1];
      k--;
    }
    s->flight[k] = t;
  }
}

void ts_hang_progress_snapshot(const ts_hang_progress_t *p, ts_hang_state_t *s) {
  memset(s, 0, sizeof *s);
  s->rank = p->rank;
  s->size = p->size;
  s->pid = (int32_t)getpid();
  ts_hang_strlcpy(s->host, p->host, sizeof s->host);
  ts_hang_strlcpy(s->module, p->module_name, sizeof s->module);
  s->fingerprint = p->fingerprint;
  s->launch_id = p->launch_id;
  s->progress = atomic_load_explicit(&p->progress, memory_order_relaxed);
  s->step = atomic_load_explicit(&p->step, memory_order_relaxed);
  if (s->step < 0) s->step = 0;
  s->activity = atomic_load_explicit(&p->activity, memory_order_relaxed);
  if (s->activity < TS_HANG_IDLE || s->activity > TS_HANG_FAILED) s->activity = TS_HANG_IDLE;
  s->instr = atomic_load_explicit(&p->instr, memory_order_relaxed);
  if (s->instr < -1) s->instr = -1;
  if (s->instr >= 0 && s->instr < p->ninstrs && p->instr_names && p->instr_names[s->instr])
    ts_hang_strlcpy(s->instr_name, p->instr_names[s->instr], sizeof s->instr_name);
  s->error = atomic_load_explicit(&p->error, memory_order_relaxed);
  if (s->error > 0) s->error = 0;
  int32_t w1 = atomic_load_explicit(&p->waiting_on1, memory_order_relaxed);
  s->waiting_on = w1 > 0 ? w1 - 1 : -1;
  uint64_t t = atomic_load_explicit(&p->t_progress_ns, memory_order_relaxed), now = mono_ns();
  s->progress_age_s = t && now > t ? (double)(now - t) * 1e-9 : 0.0;
  s->last_step_ns = atomic_load_explicit(&p->last_step_ns, memory_order_relaxed);
  s->last_compute_ns = atomic_load_explicit(&p->last_compute_ns, memory_order_relaxed);
  s->last_collective_ns = atomic_load_explicit(&p->last_collective_ns, memory_order_relaxed);
  snapshot_colls(p, s);
  s->status = TS_HANG_WORKER_OK;
}

/* ---- the heartbeat thread -------------------------------------------------- */

static void snapshot_flight(const ts_hang_progress_t *p, ts_hang_state_t *s);

static bool send_state(ts_hang_worker_t *w, uint32_t request) {
  ts_hang_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = TS_HANG_MSG_STATE;
  m.request = request;
  ts_hang_progress_snapshot(w->p, &m.state);
  if (!ts_hang_send_msg(w->fd, &m)) return false;
  if (!request) return true;
  /* An answer to a state request: the flight recorder follows. */
  ts_hang_msg_t f;
  memset(&f, 0, sizeof f);
  f.type = TS_HANG_MSG_FLIGHT;
  f.request = request;
  snapshot_flight(w->p, &f.state);
  return ts_hang_send_msg(w->fd, &f);
}

static void lost(ts_hang_worker_t *w, const char *why) {
  if (w->fd < 0) return;
  /* The job goes on without hang detection: losing the watchdog must not
   * kill the workload. */
  if (!atomic_load(&w->stop_req) || !w->got_ack)
    TS_LOG_WARN("hang detector: %s; this worker continues unwatched", why);
  close(w->fd);
  w->fd = -1;
  atomic_store(&w->connected, 0);
}

/* lost() for a failed send: says why (the reset of a coordinator that went
 * away, or a send that found its buffer full for 1 s). */
static void lost_errno(ts_hang_worker_t *w, const char *what) {
  char why[160];
  snprintf(why, sizeof why, "%s (%s)", what, strerror(errno));
  lost(w, why);
}

static void set_stragglers(ts_hang_worker_t *w, const char *text) {
  pthread_mutex_lock(&w->mu);
  ts_hang_strlcpy(w->stragglers, text, sizeof w->stragglers);
  pthread_mutex_unlock(&w->mu);
}

/* Handles every whole message in the buffer; *abort_at is set when the
 * coordinator said abort. */
static void handle_incoming(ts_hang_worker_t *w, double *abort_at) {
  int rc = ts_hang_rbuf_fill(&w->rb, w->fd);
  if (rc <= 0) {
    lost(w, rc == 0 ? "the coordinator closed the connection" : "connection to the coordinator failed");
    return;
  }
  ts_hang_msg_t m;
  ts_status_t st;
  while ((st = ts_hang_rbuf_next(&w->rb, &m)) == TS_OK) {
    switch (m.type) {
    case TS_HANG_MSG_STATE_REQUEST:
      if (!send_state(w, m.request ? m.request : 1)) {
        lost_errno(w, "cannot answer the coordinator");
        return;
      }
      break;
    case TS_HANG_MSG_ABORT:
      if (!atomic_load(&w->aborted)) {
        ts_hang_strlcpy(w->abort_reason, m.text, sizeof w->abort_reason);
        atomic_store_explicit(&w->aborted, 1, memory_order_release);
        if (w->o.on_abort) w->o.on_abort(w->o.abort_arg, w->abort_reason);
        if (w->o.abort_exit_s >= 0) *abort_at = ts_hang_mono() + w->o.abort_exit_s;
      }
      break;
    case TS_HANG_MSG_NOTE: set_stragglers(w, m.text); break;
    case TS_HANG_MSG_BYE_ACK:
      set_stragglers(w, m.text);
      w->got_ack = true;
      break;
    default: break; /* WELCOME again, REJECT: ignored */
    }
    if (w->fd < 0) return;
  }
  if (st == TS_ERR_PARSE) lost(w, "malformed message from the coordinator");
}

static void *heartbeat_loop(ts_hang_worker_t *w);

static void *heartbeat_main(void *arg) {
  ts_hang_worker_t *w = arg;
  void *r = heartbeat_loop(w);
  cancel_leave(w->cancel_told);
  return r;
}

static void *heartbeat_loop(ts_hang_worker_t *w) {
  double next = ts_hang_mono(), abort_at = 0;
  while (!atomic_load(&w->stop_req)) {
    double now = ts_hang_mono();
    if (abort_at > 0 && now >= abort_at) {
      /* The main thread did not come back from the abort (stuck in a kernel
       * or an uninterruptible wait): end the process so that no worker
       * outlives the digest. */
      fprintf(stderr, "hang detector: rank %d still running %.1f s after the abort; exiting with %d\n", w->p->rank,
              w->o.abort_exit_s, w->o.abort_exit_code);
      fflush(stderr);
      _exit(w->o.abort_exit_code);
    }
    if (w->fd >= 0 && now >= next) {
      if (!send_state(w, 0)) lost_errno(w, "cannot send a heartbeat");
      next += w->o.period_s;
      if (next < now) next = now + w->o.period_s;
    }
    double until = w->fd >= 0 ? next : now + 3600;
    if (abort_at > 0 && abort_at < until) until = abort_at;
    int ms = (int)((until - now) * 1000) + 1;
    if (ms < 0) ms = 0;
    if (atomic_load(&cancel_signo) && !w->cancel_told) {
      /* Terminated: say so, then let the signal do its work once every
       * worker of this process said it (or after 1 s). */
      ts_hang_msg_t m = {.type = TS_HANG_MSG_CANCEL};
      cancel_text(m.text, sizeof m.text);
      if (w->fd >= 0) ts_hang_send_msg(w->fd, &m);
      w->cancel_told = true;
      atomic_fetch_add(&cancel_told, 1);
      double t_end = ts_hang_mono() + 1.0;
      while (atomic_load(&cancel_told) < atomic_load(&cancel_running) && ts_hang_mono() < t_end) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
      }
      reraise(atomic_load(&cancel_signo));
      continue;
    }
    struct pollfd pf[3] = {{w->wake[0], POLLIN, 0}, {cancel_pipe[0], POLLIN, 0}, {w->fd, POLLIN, 0}};
    int rc = poll(pf, w->fd >= 0 ? 3 : 2, ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc > 0 && (pf[0].revents & POLLIN)) {
      char b[16];
      while (read(w->wake[0], b, sizeof b) > 0) {
      }
    }
    if (rc > 0 && w->fd >= 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR))) handle_incoming(w, &abort_at);
  }
  /* Goodbye: the final state (the launcher stored FAILED first on errors),
   * then BYE, then wait for the straggler report. */
  if (w->fd >= 0) {
    ts_hang_msg_t bye = {.type = TS_HANG_MSG_BYE};
    if (!send_state(w, 0) || !ts_hang_send_msg(w->fd, &bye)) lost(w, "cannot say goodbye");
  }
  while (w->fd >= 0 && !w->got_ack) {
    double left = w->stop_deadline - ts_hang_mono();
    if (left <= 0) break;
    struct pollfd pf = {w->fd, POLLIN, 0};
    int rc = poll(&pf, 1, (int)(left * 1000) + 1);
    if (rc < 0 && errno != EINTR) break;
    if (rc > 0) handle_incoming(w, &abort_at);
  }
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
  }
  atomic_store(&w->connected, 0);
  return NULL;
}

/* ---- the API ------------------------------------------------------------- */

static ts_status_t handshake(ts_hang_worker_t *w, double deadline, ts_diag_t *diag) {
  ts_hang_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = TS_HANG_MSG_HELLO;
  char nonce[33], coord_nonce[TS_HANG_AUTH_MAX + 1] = "";
  if (ts_hang_secret_generate(nonce) != TS_OK) {
    ts_diag_plain(diag, "hang detector: no randomness for a nonce");
    return TS_ERR_SYSTEM;
  }
  ts_hang_strlcpy(m.auth, nonce, sizeof m.auth);
  ts_hang_progress_snapshot(w->p, &m.state);
  if (!ts_hang_send_msg(w->fd, &m)) {
    ts_diag_plain(diag, "cannot send HELLO to the hang coordinator at '%s': %s", w->addr, strerror(errno));
    return TS_ERR_REMOTE;
  }
  for (;;) {
    ts_status_t st = ts_hang_rbuf_next(&w->rb, &m);
    if (st == TS_OK) {
      if (m.type == TS_HANG_MSG_CHALLENGE && !coord_nonce[0] && m.auth[0]) {
        ts_hang_strlcpy(coord_nonce, m.auth, sizeof coord_nonce);
        ts_hang_msg_t a = {.type = TS_HANG_MSG_AUTH};
        ts_hang_auth_mac(w->secret, "worker", coord_nonce, nonce, w->p->rank, a.auth);
        if (!ts_hang_send_msg(w->fd, &a)) {
          ts_diag_plain(diag, "cannot answer the hang coordinator's challenge at '%s': %s", w->addr, strerror(errno));
          return TS_ERR_REMOTE;
        }
        continue;
      }
      if (m.type == TS_HANG_MSG_WELCOME && coord_nonce[0]) {
        char want[65];
        ts_hang_auth_mac(w->secret, "coordinator", nonce, coord_nonce, w->p->rank, want);
        if (ts_hang_auth_equal(m.auth, want)) return TS_OK;
        ts_diag_plain(diag, "the hang coordinator at '%s' does not know this job's secret (its proof is wrong)",
                      w->addr);
        return TS_ERR_REMOTE;
      }
      if (m.type == TS_HANG_MSG_REJECT) {
        ts_diag_plain(diag, "the hang coordinator at '%s' rejected rank %d: %s", w->addr, w->p->rank, m.text);
        return TS_ERR_REMOTE;
      }
      continue;
    }
    if (st == TS_ERR_PARSE) {
      ts_diag_plain(diag, "malformed answer from the hang coordinator at '%s'", w->addr);
      return TS_ERR_REMOTE;
    }
    double left = deadline - ts_hang_mono();
    if (left <= 0) {
      ts_diag_plain(diag, "the hang coordinator at '%s' did not answer HELLO in time", w->addr);
      return TS_ERR_TIMEOUT;
    }
    struct pollfd pf = {w->fd, POLLIN, 0};
    if (poll(&pf, 1, (int)(left * 1000) + 1) > 0) {
      int rc = ts_hang_rbuf_fill(&w->rb, w->fd);
      if (rc <= 0) {
        ts_diag_plain(diag, "the hang coordinator at '%s' closed the connection during HELLO", w->addr);
        return TS_ERR_REMOTE;
      }
    }
  }
}

/* A worker needs an address that fits w->addr, the job secret, a progress
 * record and a positive heartbeat period. */
static ts_status_t check_opts(const ts_hang_worker_opts_t *o, ts_diag_t *diag) {
  if (o && o->addr && strlen(o->addr) < 128 && ts_hang_secret_ok(o->secret) && o->progress && o->period_s > 0)
    return TS_OK;
  ts_diag_plain(diag, "hang detector: bad worker options (address, secret of 1..%d characters, progress record "
                      "and a positive period are required)",
                TS_HANG_SECRET_MAX);
  return TS_ERR_INVALID_ARGUMENT;
}

ts_status_t ts_hang_worker_start(const ts_hang_worker_opts_t *o, ts_hang_worker_t **out, ts_diag_t *diag) {
  *out = NULL;
  TS_CHECK(check_opts(o, diag));
  ts_hang_worker_t *w = ts_calloc(1, sizeof *w);
  if (!w) return TS_ERR_NOMEM;
  w->o = *o;
  ts_hang_strlcpy(w->addr, o->addr, sizeof w->addr);
  ts_hang_strlcpy(w->secret, o->secret, sizeof w->secret);
  w->o.addr = w->addr;
  w->o.secret = w->secret;
  w->p = o->progress;
  w->fd = -1;
  w->wake[0] = w->wake[1] = -1;
  pthread_mutex_init(&w->mu, NULL);
  uint64_t zero = 0;
  atomic_compare_exchange_strong(&w->p->t_progress_ns, &zero, mono_ns());

  ts_status_t st;
  double deadline = ts_hang_mono() + (o->connect_timeout_s > 0 ? o->connect_timeout_s : 30.0);
  TS_CHECK_GOTO(ts_hang_connect(w->addr, deadline, &w->fd, diag), st, fail);
  TS_CHECK_GOTO(handshake(w, deadline, diag), st, fail);
  if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    ts_diag_plain(diag, "hang detector: pipe: %s", strerror(errno));
    st = TS_ERR_SYSTEM;
    goto fail;
  }
  atomic_store(&w->connected, 1);
  cancel_join();
  if (pthread_create(&w->thread, NULL, heartbeat_main, w) != 0) {
    cancel_leave(false);
    ts_diag_plain(diag, "hang detector: cannot start the heartbeat thread");
    st = TS_ERR_SYSTEM;
    goto fail;
  }
  w->running = true;
  *out = w;
  return TS_OK;
fail:
  ts_hang_worker_destroy(w);
  return st;
}

ts_status_t ts_hang_worker_stop(ts_hang_worker_t *w, double timeout_s) {
  if (!w || w->stopped) return TS_OK;
  w->stopped = true;
  if (!w->running) return TS_OK;
  w->stop_deadline = ts_hang_mono() + (timeout_s > 0 ? timeout_s : 0);
  atomic_store(&w->stop_req, 1);
  char b = 1;
  if (write(w->wake[1], &b, 1) < 0) {
    /* the pipe is non-blocking and nearly empty: cannot fail in practice */
  }
  pthread_join(w->thread, NULL);
  w->running = false;
  return w->got_ack ? TS_OK : TS_ERR_TIMEOUT;
}

bool ts_hang_worker_aborted(ts_hang_worker_t *w, char *reason, size_t n) {
  if (!w || !atomic_load_explicit(&w->aborted, memory_order_acquire)) return false;
  if (reason && n) ts_hang_strlcpy(reason, w->abort_reason, n);
  return true;
}

const char *ts_hang_worker_stragglers(ts_hang_worker_t *w) {
  if (!w) return "";
  pthread_mutex_lock(&w->mu);
  memcpy(w->stragglers_copy, w->stragglers, sizeof w->stragglers_copy);
  pthread_mutex_unlock(&w->mu);
  return w->stragglers_copy;
}

bool ts_hang_worker_connected(ts_hang_worker_t *w) { return w && atomic_load(&w->connected); }

void ts_hang_worker_destroy(ts_hang_worker_t *w) {
  if (!w) return;
  ts_hang_worker_stop(w, 1.0);
  if (w->fd >= 0) close(w->fd);
  if (w->wake[0] >= 0) close(w->wake[0]);
  if (w->wake[1] >= 0) close(w->wake[1]);
  ts_hang_rbuf_free(&w->rb);
  pthread_mutex_destroy(&w->mu);
  ts_free(w);
}
