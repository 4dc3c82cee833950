/* The coordinator: one process beside the workers (it outlives any of
 * them) that accepts authenticated heartbeat connections, watches global
 * progress, and on a hang (no worker progressed for the hang timeout while
 * a step is in flight) or an unrecoverable error (a worker died or
 * failed) gathers every worker's state out of band, classifies, writes the
 * digest and tells the workers to abort. One thread, one poll loop. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hang_internal.h"
#include "ts_env.h"

typedef struct {
  int fd;
  int rank;          /* -1 until HELLO was accepted */
  double t_accept;
  ts_hang_rbuf_t rb;
  char peer[64];
  /* the handshake: HELLO came (identity kept until AUTH), CHALLENGE sent */
  bool challenged;
  char worker_nonce[TS_HANG_AUTH_MAX + 1], nonce[33];
  ts_hang_state_t id;
} conn_t;

typedef struct {
  ts_hang_state_t s;
  int conn;              /* index into conns, -1 none */
  double t_last_msg;     /* mono */
  double t_progress;     /* mono time of the last progress bump */
  uint64_t progress_at_detect;
  bool answered;         /* the current state request */
  bool late;             /* died after the event was detected: a bystander mpirun killed, not a culprit */
  bool cancelled;        /* said CANCEL for a signal that stops the whole job */
} wstate_t;

typedef enum { PH_RUN, PH_GATHER, PH_AFTER } phase_t;

struct ts_hang_coord {
  ts_hang_coord_opts_t o;
  char secret[TS_HANG_SECRET_MAX + 1];
  char digest_path[4096];
  char checkpoint_dir[4096];
  char addr[160];
  int lfd;
  conn_t *conns;
  int nconns, capconns;
  wstate_t *w;
  int n;
  double t_start;
  phase_t phase;
  bool error_event;       /* the gather was started by a death/failure, not a timeout */
  uint32_t request;
  double gather_deadline;
  double after_deadline;  /* PH_AFTER with abort: leave at this time */
  ts_hang_stragglers_t *strag;
  char last_strag[TS_HANG_TEXT_MAX];
  ts_hang_digest_t digest;
  bool have_digest;
  int result;
  double cancel_at;       /* mono time of the first cancellation, 0 none */
  char cancel_reason[TS_HANG_TEXT_MAX + 32];
};

void ts_hang_coord_opts_default(ts_hang_coord_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->listen = "127.0.0.1:0";
  o->hang_timeout_s = 60;
  o->abort_on_hang = true;
  o->gather_timeout_s = 2;
  o->connect_timeout_s = 300;
  o->exit_timeout_s = 10;
  o->straggler_ratio = 1.5;
  o->straggler_min_s = 0.002;
}

static void info(ts_hang_coord_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info(ts_hang_coord_t *c, const char *fmt, ...) {
  if (c->o.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hang-coordinator: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

ts_status_t ts_hang_coord_create(const ts_hang_coord_opts_t *o, ts_hang_coord_t **out, ts_diag_t *diag) {
  *out = NULL;
  if (!o || o->world < 1 || !ts_hang_secret_ok(o->secret) || !(o->hang_timeout_s > 0)) {
    ts_diag_plain(diag, "hang-coordinator: --world must be >= 1, the secret 1..%d characters and the hang timeout "
                        "positive",
                  TS_HANG_SECRET_MAX);
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_hang_coord_t *c = ts_calloc(1, sizeof *c);
  if (!c) return TS_ERR_NOMEM;
  c->o = *o;
  c->lfd = -1;
  ts_hang_strlcpy(c->secret, o->secret, sizeof c->secret);
  c->o.secret = c->secret;
  if (o->digest_path) {
    ts_hang_strlcpy(c->digest_path, o->digest_path, sizeof c->digest_path);
    c->o.digest_path = c->digest_path;
  }
  if (o->checkpoint_dir) {
    ts_hang_strlcpy(c->checkpoint_dir, o->checkpoint_dir, sizeof c->checkpoint_dir);
    c->o.checkpoint_dir = c->checkpoint_dir;
  }
  if (!(c->o.gather_timeout_s > 0)) c->o.gather_timeout_s = 2;
  if (!(c->o.connect_timeout_s > 0)) c->o.connect_timeout_s = 300;
  if (!(c->o.exit_timeout_s > 0)) c->o.exit_timeout_s = 10;
  if (!(c->o.silence_timeout_s > 0)) c->o.silence_timeout_s = 3 * o->hang_timeout_s > 30 ? 3 * o->hang_timeout_s : 30;
  c->n = o->world;
  ts_status_t st;
  c->w = ts_calloc((size_t)c->n, sizeof *c->w);
  if (!c->w) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int i = 0; i < c->n; i++) {
    c->w[i].conn = -1;
    c->w[i].s.rank = i;
    c->w[i].s.size = c->n;
    c->w[i].s.instr = -1;
    c->w[i].s.waiting_on = -1;
    c->w[i].s.status = TS_HANG_WORKER_NEVER_CONNECTED;
  }
  TS_CHECK_GOTO(ts_hang_stragglers_create(c->n, o->straggler_ratio, o->straggler_min_s, &c->strag), st, fail);
  TS_CHECK_GOTO(ts_hang_listen(o->listen ? o->listen : "127.0.0.1:0", c->addr, sizeof c->addr, &c->lfd, diag), st,
                fail);
  c->t_start = ts_hang_mono();
  *out = c;
  return TS_OK;
fail:
  ts_hang_coord_destroy(c);
  return st;
}

const char *ts_hang_coord_addr(const ts_hang_coord_t *c) { return c->addr; }
const ts_hang_digest_t *ts_hang_coord_digest(const ts_hang_coord_t *c) { return c->have_digest ? &c->digest : NULL; }

void ts_hang_coord_destroy(ts_hang_coord_t *c) {
  if (!c) return;
  for (int i = 0; i < c->nconns; i++) {
    if (c->conns[i].fd >= 0) close(c->conns[i].fd);
    ts_hang_rbuf_free(&c->conns[i].rb);
  }
  ts_free(c->conns);
  if (c->lfd >= 0) close(c->lfd);
  ts_free(c->w);
  ts_hang_stragglers_destroy(c->strag);
  ts_hang_digest_free(&c->digest);
  ts_free(c);
}

/* ---- connections ----------------------------------------------------------- */

static void drop(ts_hang_coord_t *c, int ci) {
  conn_t *k = &c->conns[ci];
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  if (k->rank >= 0 && c->w[k->rank].conn == ci) c->w[k->rank].conn = -1;
  k->rank = -1;
  k->rb.len = 0;
}

static void reject(ts_hang_coord_t *c, int ci, const char *why) {
  info(c, "rejected a connection from %s: %s", c->conns[ci].peer, why);
  ts_hang_msg_t m = {.type = TS_HANG_MSG_REJECT};
  ts_hang_strlcpy(m.text, why, sizeof m.text);
  ts_hang_send_msg(c->conns[ci].fd, &m);
  drop(c, ci);
}

static void accept_all(ts_hang_coord_t *c) {
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(c->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    int ci = -1;
    for (int i = 0; i < c->nconns; i++)
      if (c->conns[i].fd < 0) ci = i;
    if (ci < 0) {
      if (c->nconns == c->capconns) {
        int cap = c->capconns ? 2 * c->capconns : 16;
        conn_t *p = ts_realloc(c->conns, sizeof *p * (size_t)cap);
        if (!p) {
          close(fd);
          return;
        }
        c->conns = p;
        c->capconns = cap;
      }
      ci = c->nconns++;
      memset(&c->conns[ci], 0, sizeof c->conns[ci]);
    }
    conn_t *k = &c->conns[ci];
    k->fd = fd;
    k->rank = -1;
    k->t_accept = ts_hang_mono();
    k->rb.len = 0;
    k->challenged = false;
    char host[64] = "?";
    if (ss.ss_family == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
    if (ss.ss_family == AF_INET6) inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
    snprintf(k->peer, sizeof k->peer, "%s", host);
  }
}


/* A worker's event (death, failure): starts the gather unless one runs. */
static void worker_event(ts_hang_coord_t *c, int r, int status, const char *note);

/* The handshake of an unauthenticated connection: HELLO (checked, then
 * CHALLENGE), then AUTH (checked, then WELCOME with our proof). */
static void hello(ts_hang_coord_t *c, int ci, const ts_hang_msg_t *m) {
  conn_t *k = &c->conns[ci];
  if (!k->challenged) {
    if (m->type != TS_HANG_MSG_HELLO) return reject(c, ci, "the first message must be HELLO");
    if (strlen(m->auth) < 16) return reject(c, ci, "HELLO without a nonce");
  } else if (m->type != TS_HANG_MSG_AUTH) {
    return reject(c, ci, "the second message must be AUTH");
  }
  const ts_hang_state_t *id = k->challenged ? &k->id : &m->state;
  if (id->size != c->n || id->rank < 0 || id->rank >= c->n) {
    char why[128];
    snprintf(why, sizeof why, "rank %d of %d does not fit this job's world of %d", id->rank, id->size, c->n);
    return reject(c, ci, why);
  }
  wstate_t *w = &c->w[id->rank];
  if (w->s.status != TS_HANG_WORKER_NEVER_CONNECTED) {
    char why[64];
    snprintf(why, sizeof why, "rank %d is connected already", id->rank);
    return reject(c, ci, why);
  }
  if (!k->challenged) {
    k->id = m->state;
    ts_hang_strlcpy(k->worker_nonce, m->auth, sizeof k->worker_nonce);
    if (ts_hang_secret_generate(k->nonce) != TS_OK) return reject(c, ci, "no randomness for a challenge");
    ts_hang_msg_t ch = {.type = TS_HANG_MSG_CHALLENGE};
    ts_hang_strlcpy(ch.auth, k->nonce, sizeof ch.auth);
    k->challenged = true;
    if (!ts_hang_send_msg(k->fd, &ch)) drop(c, ci);
    return;
  }
  char want[65];
  ts_hang_auth_mac(c->secret, "worker", k->nonce, k->worker_nonce, id->rank, want);
  if (!ts_hang_auth_equal(m->auth, want)) return reject(c, ci, "authentication failed (not this job's secret)");
  ts_hang_msg_t ok = {.type = TS_HANG_MSG_WELCOME};
  ts_hang_auth_mac(c->secret, "coordinator", k->worker_nonce, k->nonce, id->rank, ok.auth);
  if (!ts_hang_send_msg(c->conns[ci].fd, &ok)) return drop(c, ci);
  c->conns[ci].rank = id->rank;
  w->conn = ci;
  w->s.rank = id->rank;
  w->s.size = id->size;
  w->s.pid = id->pid;
  memcpy(w->s.host, id->host, sizeof w->s.host);
  memcpy(w->s.module, id->module, sizeof w->s.module);
  w->s.fingerprint = id->fingerprint;
  w->s.launch_id = id->launch_id;
  w->s.status = TS_HANG_WORKER_OK;
  w->t_last_msg = w->t_progress = ts_hang_mono();
  info(c, "rank %d connected (%s, pid %d, module %s)", id->rank, id->host, id->pid, id->module);
}

static void state(ts_hang_coord_t *c, int r, const ts_hang_msg_t *m) {
  wstate_t *w = &c->w[r];
  double now = ts_hang_mono();
  const ts_hang_state_t *s = &m->state;
  int prev_activity = w->s.activity;
  /* Hot fields only: the identity came with HELLO. */
  w->s.progress = s->progress;
  w->s.step = s->step;
  w->s.activity = s->activity;
  w->s.instr = s->instr;
  memcpy(w->s.instr_name, s->instr_name, sizeof w->s.instr_name);
  w->s.error = s->error;
  w->s.waiting_on = s->waiting_on;
  w->s.progress_age_s = s->progress_age_s;
  w->s.last_step_ns = s->last_step_ns;
  w->s.last_compute_ns = s->last_compute_ns;
  w->s.last_collective_ns = s->last_collective_ns;
  w->s.ncolls = s->ncolls;
  memcpy(w->s.colls, s->colls, sizeof w->s.colls);
  w->t_last_msg = now;
  w->t_progress = now - s->progress_age_s;
  if (c->phase == PH_GATHER && m->request == c->request) w->answered = true; /* FLIGHT follows at once */
  /* The step that finished last: a straggler sample. */
  int64_t done_step = s->activity == TS_HANG_IDLE || s->activity == TS_HANG_FINISHED ? s->step : s->step - 1;
  if (s->last_step_ns) ts_hang_stragglers_add(c->strag, r, w->s.host, done_step, s->last_step_ns, s->last_compute_ns,
                                              s->last_collective_ns);
  if (s->activity == TS_HANG_FAILED && prev_activity != TS_HANG_FAILED) {
    char note[96];
    snprintf(note, sizeof note, "failed with %s", ts_status_string((ts_status_t)s->error));
    worker_event(c, r, TS_HANG_WORKER_OK, note);
  }
}

/* Whether the process that launched the job is gone (or a zombie). */
static bool launcher_gone(const ts_hang_coord_t *c) {
  if (c->o.launcher_pid <= 1) return false;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", c->o.launcher_pid);
  FILE *f = fopen(path, "r");
  if (!f) return kill(c->o.launcher_pid, 0) != 0 && errno == ESRCH;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* A worker's CANCEL: the whole job is being stopped when the signal came
 * from the launcher or the terminal ('L'), or when every worker lives in
 * the signalled process (a --devices job); otherwise someone terminated
 * this one rank, and its death (next) is a culprit's. */
static void cancel(ts_hang_coord_t *c, int r, const char *text) {
  wstate_t *w = &c->w[r];
  bool whole = text[0] == 'L';
  if (!whole) {
    whole = true;
    for (int i = 0; i < c->n; i++) whole = whole && c->w[i].s.pid == w->s.pid;
  }
  const char *what = text[0] ? text + 1 : text;
  if (!whole || c->phase != PH_RUN) {
    snprintf(w->s.note, sizeof w->s.note, "terminated by %.110s", what);
    return;
  }
  for (int i = 0; i < c->n; i++)
    if (i == r || (c->w[i].s.pid == w->s.pid && c->w[i].s.status != TS_HANG_WORKER_NEVER_CONNECTED))
      c->w[i].cancelled = true;
  if (!c->cancel_at) {
    c->cancel_at = ts_hang_mono();
    snprintf(c->cancel_reason, sizeof c->cancel_reason, "rank %d got %.200s", r, what);
  }
}

/* Reads a connection; false when it was dropped. */
static bool serve(ts_hang_coord_t *c, int ci) {
  conn_t *k = &c->conns[ci];
  int rc = ts_hang_rbuf_fill(&k->rb, k->fd);
  int r = k->rank;
  if (rc <= 0) {
    drop(c, ci);
    if (r >= 0 && c->w[r].s.status == TS_HANG_WORKER_OK && c->phase == PH_RUN && !c->w[r].cancelled &&
        launcher_gone(c)) {
      /* mpirun (or whatever started the job) went first: the job was
       * stopped from outside (SIGKILL to mpirun), its ranks die with it. */
      c->w[r].cancelled = true;
      if (!c->cancel_at) {
        c->cancel_at = ts_hang_mono();
        snprintf(c->cancel_reason, sizeof c->cancel_reason, "its launcher (pid %d) is gone", c->o.launcher_pid);
      }
    }
    if (r >= 0 && c->cancel_at > 0 && c->phase == PH_RUN) c->w[r].cancelled = true;
    if (r >= 0 && c->w[r].cancelled && c->w[r].s.status == TS_HANG_WORKER_OK) {
      c->w[r].s.status = TS_HANG_WORKER_CANCELLED;
      c->w[r].answered = true;
      if (c->phase != PH_RUN) c->w[r].late = true;
      info(c, "rank %d: cancelled", r);
    } else if (r >= 0 && c->w[r].s.status == TS_HANG_WORKER_OK)
      worker_event(c, r, TS_HANG_WORKER_DEAD, rc == 0 ? "connection lost (the process died or closed it)"
                                                      : "connection failed");
    return false;
  }
  ts_hang_msg_t *m = ts_malloc(sizeof *m);
  if (!m) return true;
  ts_status_t st;
  while ((st = ts_hang_rbuf_next(&k->rb, m)) == TS_OK) {
    r = k->rank;
    if (r < 0) {
      hello(c, ci, m);
      if (k->fd < 0) break;
      continue;
    }
    if (m->type == TS_HANG_MSG_STATE) {
      state(c, r, m);
    } else if (m->type == TS_HANG_MSG_FLIGHT) {
      wstate_t *fw = &c->w[r];
      fw->s.nflight = m->state.nflight;
      memcpy(fw->s.flight, m->state.flight, sizeof fw->s.flight);
      if (c->phase == PH_GATHER && m->request == c->request) fw->answered = true;
    } else if (m->type == TS_HANG_MSG_CANCEL) {
      cancel(c, r, m->text);
    } else if (m->type == TS_HANG_MSG_BYE) {
      c->w[r].s.status = TS_HANG_WORKER_FINISHED;
      c->w[r].answered = true;
      ts_buf_t b = {0};
      ts_hang_stragglers_report(c->strag, &b);
      ts_hang_msg_t ack = {.type = TS_HANG_MSG_BYE_ACK};
      ts_hang_strlcpy(ack.text, b.data ? b.data : "", sizeof ack.text);
      ts_buf_free(&b);
      ts_hang_send_msg(k->fd, &ack);
      info(c, "rank %d finished", r);
      drop(c, ci);
      break;
    } else {
      info(c, "rank %d sent an unexpected message (type %d); ignored", r, m->type);
    }
  }
  if (st == TS_ERR_PARSE && k->fd >= 0) {
    r = k->rank;
    if (r < 0) {
      reject(c, ci, "malformed message");
    } else {
      info(c, "rank %d sent a malformed message; connection closed", r);
      drop(c, ci);
      worker_event(c, r, TS_HANG_WORKER_DEAD, "malformed message from the worker");
    }
  }
  ts_free(m);
  return k->fd >= 0;
}

/* ---- detection ---------------------------------------------------------------- */

static void start_gather(ts_hang_coord_t *c, bool error_event) {
  if (c->phase != PH_RUN) return;
  c->phase = PH_GATHER;
  c->error_event = error_event;
  c->request++;
  if (!c->request) c->request = 1;
  c->gather_deadline = ts_hang_mono() + c->o.gather_timeout_s;
  ts_hang_msg_t m = {.type = TS_HANG_MSG_STATE_REQUEST, .request = c->request};
  for (int r = 0; r < c->n; r++) {
    wstate_t *w = &c->w[r];
    w->answered = w->s.status != TS_HANG_WORKER_OK;
    w->progress_at_detect = w->s.progress;
    if (w->s.status == TS_HANG_WORKER_OK && w->conn >= 0) ts_hang_send_msg(c->conns[w->conn].fd, &m);
  }
}

static void worker_event(ts_hang_coord_t *c, int r, int status, const char *note) {
  wstate_t *w = &c->w[r];
  if (c->cancel_at > 0 && c->phase == PH_RUN) {
    /* a whole-job cancel is under way: this end is part of it */
    w->cancelled = true;
    if (status != TS_HANG_WORKER_OK) w->s.status = TS_HANG_WORKER_CANCELLED;
    info(c, "rank %d: %s (during the cancel)", r, note);
    return;
  }
  w->s.status = status;
  if (status != TS_HANG_WORKER_OK) w->answered = true;
  if (c->phase != PH_RUN) w->late = true;
  if (!w->s.note[0]) ts_hang_strlcpy(w->s.note, note, sizeof w->s.note);
  if (w->s.event_time == 0 && !w->late) w->s.event_time = ts_hang_wall();
  info(c, "rank %d: %s", r, note);
  if (c->phase == PH_RUN) start_gather(c, true);
}

static bool in_flight(const ts_hang_coord_t *c) {
  for (int r = 0; r < c->n; r++) {
    const ts_hang_state_t *s = &c->w[r].s;
    if (s->status == TS_HANG_WORKER_OK &&
        (s->activity == TS_HANG_COMPUTE || s->activity == TS_HANG_COLLECTIVE || s->activity == TS_HANG_INPUT_WAIT))
      return true;
  }
  return false;
}

static void check_run(ts_hang_coord_t *c, double now) {
  int connected = 0, finished = 0, never = 0;
  double last = 0;
  for (int r = 0; r < c->n; r++) {
    wstate_t *w = &c->w[r];
    if (w->s.status == TS_HANG_WORKER_NEVER_CONNECTED) never++;
    if (w->s.status == TS_HANG_WORKER_FINISHED) finished++;
    if (w->s.status != TS_HANG_WORKER_OK) continue;
    connected++;
    if (now - w->t_last_msg > c->o.silence_timeout_s) {
      char note[96];
      snprintf(note, sizeof note, "no heartbeat for %.1f s", now - w->t_last_msg);
      worker_event(c, r, TS_HANG_WORKER_DEAD, note);
      return;
    }
    if (w->t_progress > last) last = w->t_progress;
  }
  if (never && now - c->t_start > c->o.connect_timeout_s) {
    for (int r = 0; r < c->n; r++)
      if (c->w[r].s.status == TS_HANG_WORKER_NEVER_CONNECTED) c->w[r].s.event_time = ts_hang_wall();
    info(c, "%d worker(s) did not connect within %.0f s", never, c->o.connect_timeout_s);
    start_gather(c, true);
    return;
  }
  if (connected && in_flight(c) && now - last > c->o.hang_timeout_s) start_gather(c, false);
}

/* The newest DIR/step-K with a manifest: a complete checkpoint (checkpoint/
 * renames a step-K.tmp to step-K only when it is whole). */
static void newest_checkpoint(const char *dir, char *buf, size_t n) {
  DIR *d = opendir(dir);
  long long best = -1;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char *end, p[4096 + 300];
    if (strncmp(e->d_name, "step-", 5) != 0) continue;
    long long k = strtoll(e->d_name + 5, &end, 10);
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s/manifest.json", dir, e->d_name);
    if (end != e->d_name + 5 && !*end && k > best && stat(p, &sb) == 0) best = k;
  }
  if (d) closedir(d);
  if (best >= 0) snprintf(buf, n, "%s/step-%lld", dir, best);
}

/* Fills the digest from the gathered states, prints it, writes the JSON. */
static void conclude(ts_hang_coord_t *c) {
  double now = ts_hang_mono(), wall = ts_hang_wall();
  ts_hang_digest_t *d = &c->digest;
  memset(d, 0, sizeof *d);
  d->nworkers = c->n;
  d->workers = ts_calloc((size_t)c->n, sizeof *d->workers);
  if (!d->workers) return;
  for (int r = 0; r < c->n; r++) {
    wstate_t *w = &c->w[r];
    ts_hang_state_t *s = &d->workers[r];
    *s = w->s;
    if (w->late && s->status != TS_HANG_WORKER_FINISHED) {
      /* Left (or failed) after the first event: most likely killed by the
       * launcher because of it. Its last state is what it was doing. */
      s->status = TS_HANG_WORKER_LEFT;
      if (s->activity == TS_HANG_FAILED) s->activity = TS_HANG_IDLE;
      snprintf(s->note, sizeof s->note, "left after the first error was detected");
    } else if (s->status == TS_HANG_WORKER_OK && !w->answered) {
      s->status = TS_HANG_WORKER_NO_RESPONSE;
      double silent = now - w->t_last_msg;
      if (silent > c->o.gather_timeout_s)
        snprintf(s->note, sizeof s->note, "no answer to the state request, silent for %.1f s", silent);
      else
        snprintf(s->note, sizeof s->note, "no answer to the state request within %.1f s", c->o.gather_timeout_s);
    }
    if (s->status == TS_HANG_WORKER_OK || s->status == TS_HANG_WORKER_NO_RESPONSE || s->status == TS_HANG_WORKER_LEFT) {
      s->progress_age_s = now - w->t_progress;
      if (s->event_time == 0) s->event_time = wall - (now - w->t_progress);
    }
  }
  if (ts_hang_classify(d->workers, c->n, &d->verdict) != TS_OK) return;
  const ts_hang_verdict_t *v = &d->verdict;
  d->hang_timeout_s = c->o.hang_timeout_s;
  d->coordinator_pid = (int32_t)getpid();
  ts_hang_format_time(wall, d->detected_at, sizeof d->detected_at);
  /* First error: the first culprit's event; with none, the moment the
   * whole job stopped progressing. */
  double t_first = 0;
  if (v->first_error_rank >= 0) t_first = d->workers[v->first_error_rank].event_time;
  if (t_first == 0)
    for (int r = 0; r < c->n; r++)
      if (d->workers[r].event_time > t_first) t_first = d->workers[r].event_time;
  ts_hang_format_time(t_first, d->first_error_timestamp, sizeof d->first_error_timestamp);
  if (v->cause == TS_HANG_CAUSE_UNRECOVERABLE_ERROR) {
    const ts_hang_state_t *f = &d->workers[v->first_error_rank];
    snprintf(d->first_error_type, sizeof d->first_error_type, "%s",
             f->status == TS_HANG_WORKER_NEVER_CONNECTED ? "worker never connected"
             : f->note[0]                                ? f->note
                                                         : ts_status_string((ts_status_t)f->error));
  } else {
    snprintf(d->first_error_type, sizeof d->first_error_type,
             "hang: no worker made progress for %.1f s (hang timeout %g s)", t_first > 0 ? wall - t_first : 0.0,
             c->o.hang_timeout_s);
  }
  if (c->o.checkpoint_dir) newest_checkpoint(c->o.checkpoint_dir, d->checkpoint, sizeof d->checkpoint);
  ts_buf_t sb = {0};
  ts_hang_stragglers_report(c->strag, &sb);
  d->stragglers = sb.data;
  c->have_digest = true;

  ts_buf_t text = {0};
  ts_hang_digest_text(d, &text);
  fputs(text.data ? text.data : "", stderr);
  fflush(stderr);
  ts_buf_free(&text);
  if (c->o.digest_path) {
    char *json = NULL;
    ts_diag_t diag = {0};
    if (ts_hang_digest_json(d, &json) != TS_OK ||
        ts_write_file_atomic(c->o.digest_path, json, strlen(json), &diag) != TS_OK)
      fprintf(stderr, "hang-coordinator: %s\n", diag.text ? diag.text : "cannot write the JSON digest (out of memory)");
    ts_free(json);
    ts_diag_free(&diag);
  }
}

static void finish_gather(ts_hang_coord_t *c) {
  if (!c->error_event) {
    /* Confirm: a worker that progressed since the detection means the
     * timeout fired on stale heartbeats. */
    for (int r = 0; r < c->n; r++) {
      wstate_t *w = &c->w[r];
      if (w->s.status == TS_HANG_WORKER_OK && w->answered && w->s.progress != w->progress_at_detect) {
        info(c, "rank %d progressed during the state collection: no hang", r);
        c->phase = PH_RUN;
        return;
      }
    }
    /* Heartbeat threads never wait on their main thread: when not one
     * worker answers, this host (or the coordinator) is starved, not the
     * job hung; ask again. A job that really froze whole is caught by the
     * silence timeout. */
    int ok = 0, answered = 0;
    for (int r = 0; r < c->n; r++)
      if (c->w[r].s.status == TS_HANG_WORKER_OK) {
        ok++;
        answered += c->w[r].answered;
      }
    if (ok > 1 && answered == 0) {
      info(c, "no worker answered the state request: no verdict yet");
      c->phase = PH_RUN;
      return;
    }
  }
  conclude(c);
  c->result = 1;
  c->phase = PH_AFTER;
  c->after_deadline = ts_hang_mono() + c->o.exit_timeout_s;
  if (c->o.abort_on_hang) {
    ts_hang_msg_t m = {.type = TS_HANG_MSG_ABORT};
    snprintf(m.text, sizeof m.text, "hang detector: %s (%s)", ts_hang_cause_title(c->digest.verdict.cause),
             c->digest.verdict.reason);
    int told = 0;
    for (int r = 0; r < c->n; r++)
      if (c->w[r].conn >= 0 && ts_hang_send_msg(c->conns[c->w[r].conn].fd, &m)) told++;
    info(c, "told %d worker(s) to abort", told);
  } else {
    info(c, "--abort-on-hang=false: the workers keep running for inspection");
  }
}

/* Before every worker connected: the process that started us is gone, or
 * nothing is left of the launch's process group. Then there is no job to
 * watch (killed during startup) and nobody to tell. */
static bool job_gone(const ts_hang_coord_t *c) {
  bool waiting = false;
  for (int r = 0; r < c->n; r++) waiting = waiting || c->w[r].s.status == TS_HANG_WORKER_NEVER_CONNECTED;
  if (!waiting) return false;
  if (c->o.parent_pid > 0 && getppid() != c->o.parent_pid) return true;
  return c->o.launch_pgid > 1 && kill(-c->o.launch_pgid, 0) != 0 && errno == ESRCH;
}

int ts_hang_coord_run(ts_hang_coord_t *c) {
  signal(SIGPIPE, SIG_IGN);
  struct pollfd *pf = NULL;
  int cap = 0;
  for (;;) {
    double now = ts_hang_mono();
    int live = 0, done = 0;
    for (int r = 0; r < c->n; r++) {
      if (c->w[r].conn >= 0) live++;
      if (c->w[r].s.status == TS_HANG_WORKER_FINISHED) done++;
    }
    if (c->phase == PH_RUN && done == c->n && !c->cancel_at) {
      ts_buf_t b = {0};
      if (ts_hang_stragglers_report(c->strag, &b) && b.data) fputs(b.data, stderr);
      ts_buf_free(&b);
      info(c, "every worker finished");
      break;
    }
    if (c->phase == PH_AFTER && (live == 0 || (c->o.abort_on_hang && now > c->after_deadline))) {
      if (live) info(c, "%d worker(s) still connected %.0f s after the abort; leaving", live, c->o.exit_timeout_s);
      break;
    }
    if (c->phase == PH_RUN && c->cancel_at > 0 && now - c->cancel_at > 0.5) {
      /* The user stopped the job (deaths since the cancel are part of it). */
      fprintf(stderr, "hang detector: the job was cancelled (%s); no digest\n", c->cancel_reason);
      fflush(stderr);
      c->result = 5;
      c->phase = PH_AFTER;
      c->after_deadline = now + c->o.exit_timeout_s;
      continue;
    }
    if (c->phase == PH_RUN && job_gone(c)) {
      int never = 0;
      for (int r = 0; r < c->n; r++) never += c->w[r].s.status == TS_HANG_WORKER_NEVER_CONNECTED;
      info(c, "the job ended before %d worker(s) connected; leaving without a digest", never);
      c->result = 5;
      break;
    }
    if (c->phase == PH_RUN) check_run(c, now);
    if (c->phase == PH_GATHER) {
      /* Waiting out the gather timeout for a worker that has sent nothing,
       * not even a heartbeat (8 a hang timeout), for as long as nobody made
       * progress only delays the digest: it is frozen or gone. */
      bool all = true;
      for (int r = 0; r < c->n; r++)
        all = all && (c->w[r].answered || now - c->w[r].t_last_msg > c->o.hang_timeout_s);
      if (all || now > c->gather_deadline) finish_gather(c);
      if (c->phase != PH_GATHER) continue;
    }
    /* Authentication deadline: a connection that says nothing useful in
     * 10 s is closed. */
    for (int i = 0; i < c->nconns; i++)
      if (c->conns[i].fd >= 0 && c->conns[i].rank < 0 && now - c->conns[i].t_accept > 10)
        reject(c, i, "not authenticated within 10 s");
    if (c->nconns + 1 > cap) {
      cap = c->nconns + 16;
      struct pollfd *p = ts_realloc(pf, sizeof *p * (size_t)cap);
      if (!p) {
        fprintf(stderr, "hang-coordinator: out of memory; leaving without a digest\n");
        break;
      }
      pf = p;
    }
    int np = 0;
    pf[np++] = (struct pollfd){c->lfd, POLLIN, 0};
    for (int i = 0; i < c->nconns; i++) pf[np++] = (struct pollfd){c->conns[i].fd, POLLIN, 0};
    int rc = poll(pf, (nfds_t)np, 20);
    if (rc < 0 && errno != EINTR) {
      fprintf(stderr, "hang-coordinator: poll: %s; leaving without a digest\n", strerror(errno));
      break;
    }
    if (rc <= 0) continue;
    if (pf[0].revents & POLLIN) accept_all(c);
    for (int i = 1; i < np; i++)
      if (pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && c->conns[i - 1].fd == pf[i].fd)
        serve(c, i - 1);
  }
  ts_free(pf);
  bool never = false;
  for (int r = 0; r < c->n; r++) never = never || c->w[r].s.status == TS_HANG_WORKER_NEVER_CONNECTED;
  if (c->result == 1 && never) c->result = 3;
  if (c->result == 5) c->have_digest = false;
  return c->result;
}

/* ---- `tessera hang-coordinator` ------------------------------------------------- */

/* A coordinator that dies says so (its stderr is rank 0's): a crash or a
 * signal from outside would otherwise end the watch without a word, the
 * workers only seeing their connections reset. */
static void fatal_signal(int sig) {
  /* async-signal-safe: no stdio, the number by hand */
  char msg[64] = "hang-coordinator: killed by signal ";
  size_t n = strlen(msg);
  if (sig >= 10) msg[n++] = (char)('0' + sig / 10 % 10);
  msg[n++] = (char)('0' + sig % 10);
  memcpy(msg + n, "; no digest\n", 12);
  if (write(STDERR_FILENO, msg, n + 12) < 0) {
    /* nothing left to tell */
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void say_fatal_signals(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], fatal_signal);
}

static bool parse_seconds(const char *flag, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s ? s : "", &end);
  if (!s || errno || end == s || *end || !(v > 0) || v > 1e7) {
    fprintf(stderr, "tessera hang-coordinator: error: %s wants a positive number of seconds, got '%s'\n", flag,
            s ? s : "");
    return false;
  }
  *out = v;
  return true;
}

static void coordinator_usage(FILE *f) {
  fprintf(f, "usage: tessera hang-coordinator --listen HOST:PORT --world N [--secret S] [--hang-timeout SEC]\n"
             "                                [--hang-digest FILE] [--abort-on-hang[=true|false]]\n"
             "                                [--gather-timeout SEC] [--connect-timeout SEC] [--quiet]\n"
             "\n"
             "The hang detector's coordinator (started by `tessera run`). Prints the bound HOST:PORT on stdout,\n"
             "accepts the workers presenting the job secret (--secret or TESSERA_HANG_SECRET), writes a digest\n"
             "when they hang. Exit codes: 0 every worker finished, 1 a digest was written, 2 usage,\n"
             "3 workers never connected.\n");
}

int ts_hang_coordinator_main(int argc, char **argv) {
  enum { O_LISTEN = 0x100, O_WORLD, O_SECRET, O_TIMEOUT, O_DIGEST, O_ABORT, O_GATHER, O_CONNECT, O_QUIET, O_CKPT,
         O_PARENT, O_LAUNCHER, O_PGID };
  static const struct option opts[] = {
      {"listen", required_argument, NULL, O_LISTEN},       {"world", required_argument, NULL, O_WORLD},
      {"secret", required_argument, NULL, O_SECRET},       {"hang-timeout", required_argument, NULL, O_TIMEOUT},
      {"hang-digest", required_argument, NULL, O_DIGEST},  {"abort-on-hang", optional_argument, NULL, O_ABORT},
      {"gather-timeout", required_argument, NULL, O_GATHER}, {"connect-timeout", required_argument, NULL, O_CONNECT},
      {"quiet", no_argument, NULL, O_QUIET},               {"help", no_argument, NULL, 'h'},
      {"checkpoint-dir", required_argument, NULL, O_CKPT},
      {"parent-pid", required_argument, NULL, O_PARENT},   {"launcher-pid", required_argument, NULL, O_LAUNCHER},
      {"launch-pgid", required_argument, NULL, O_PGID},
      {NULL, 0, NULL, 0},
  };
  /* Visible by name (ps, pgrep tessera): not "exe" nor "tessera". */
  prctl(PR_SET_NAME, "tessera-hang-coordinator", 0, 0, 0); /* the kernel keeps the first 15 bytes */
  say_fatal_signals();
  ts_hang_coord_opts_t o;
  ts_hang_coord_opts_default(&o);
  o.listen = NULL;
  o.secret = ts_env_get(TS_ENV_HANG_SECRET);
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case O_LISTEN: o.listen = optarg; break;
    case O_WORLD: {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 1 << 20) {
        fprintf(stderr, "tessera hang-coordinator: error: --world wants a worker count >= 1, got '%s'\n", optarg);
        return 2;
      }
      o.world = (int)v;
      break;
    }
    case O_SECRET: o.secret = optarg; break;
    case O_TIMEOUT:
      if (!parse_seconds("--hang-timeout", optarg, &o.hang_timeout_s)) return 2;
      break;
    case O_DIGEST: o.digest_path = optarg; break;
    case O_ABORT:
      if (!optarg || !strcmp(optarg, "true"))
        o.abort_on_hang = true;
      else if (!strcmp(optarg, "false"))
        o.abort_on_hang = false;
      else {
        fprintf(stderr, "tessera hang-coordinator: error: --abort-on-hang wants true or false, got '%s'\n", optarg);
        return 2;
      }
      break;
    case O_GATHER:
      if (!parse_seconds("--gather-timeout", optarg, &o.gather_timeout_s)) return 2;
      break;
    case O_CONNECT:
      if (!parse_seconds("--connect-timeout", optarg, &o.connect_timeout_s)) return 2;
      break;
    case O_QUIET: o.quiet = true; break;
    case O_CKPT: o.checkpoint_dir = optarg; break;
    case O_PARENT:
    case O_LAUNCHER:
    case O_PGID: {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 0 || v > 1 << 30) {
        fprintf(stderr, "tessera hang-coordinator: error: %s wants a process id, got '%s'\n", argv[optind - 1], optarg);
        return 2;
      }
      *(c == O_PARENT ? &o.parent_pid : c == O_LAUNCHER ? &o.launcher_pid : &o.launch_pgid) = (int)v;
      break;
    }
    case 'h': coordinator_usage(stdout); return 0;
    case ':':
      fprintf(stderr, "tessera hang-coordinator: error: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    default: fprintf(stderr, "tessera hang-coordinator: error: unknown option '%s'\n", argv[optind - 1]); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "tessera hang-coordinator: error: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (!o.listen || !o.world || !o.secret || !*o.secret) {
    fprintf(stderr, "tessera hang-coordinator: error: --listen, --world and a secret (--secret or "
                    "TESSERA_HANG_SECRET) are required\n");
    return 2;
  }
  ts_diag_t diag = {0};
  ts_hang_coord_t *coord;
  ts_status_t st = ts_hang_coord_create(&o, &coord, &diag);
  if (st != TS_OK) {
    fprintf(stderr, "tessera hang-coordinator: error: %s\n", diag.text ? diag.text : ts_status_string(st));
    ts_diag_free(&diag);
    return st == TS_ERR_INVALID_ARGUMENT ? 2 : 4;
  }
  signal(SIGPIPE, SIG_IGN);
  printf("%s\n", ts_hang_coord_addr(coord));
  fflush(stdout);
  int rc = ts_hang_coord_run(coord);
  ts_hang_coord_destroy(coord);
  return rc;
}
