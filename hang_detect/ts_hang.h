/* Tessera hang detection (RapidEye-style, after MXLA's debugging guide in
 * shared/seeds/megascale.md): every worker's heartbeat thread reports its
 * progress record (ts_hang_progress.h) to a coordinator process over TCP;
 * the coordinator declares a hang when no worker progressed for the hang
 * timeout while a step is in flight (or at once when a worker dies or
 * fails), gathers every worker's state out of band, classifies the cause,
 * names the culprit workers, writes a digest (text on stderr, JSON to a
 * file) and tells every worker to abort. Also: straggler lines, fault
 * injection (TESSERA_FAULT) for tests and rehearsals.
 *
 * How `tessera run` uses it (N ranks under mpirun, one process each):
 *   1. every rank: world communicator up (ts_coll_comm_create_mpi), program
 *      and device created (ts_rt_device_create fills progress->instr_names
 *      and progress->comms), identity filled (ts_hang_identity_fill; then
 *      ts_hang_fault_identity for module:/fingerprint: faults);
 *   2. rank 0 only: ts_hang_secret_generate, then ts_hang_coordinator_spawn
 *      (its own session: it outlives every rank, rank 0 included), which
 *      returns the bound "host:port"; with --hang-coordinator=ADDR the
 *      coordinator exists already and the secret comes from
 *      TESSERA_HANG_SECRET;
 *   3. rank 0 broadcasts a ts_hang_rendezvous_t (address + secret) over the
 *      world (ts_coll_broadcast_post of sizeof bytes as TS_U8, root 0);
 *   4. every rank: ts_hang_worker_start (on_abort: set the fault hook's abort
 *      flag and ts_coll_comm_abort the world; the worker _exits the process
 *      itself if the main thread is still stuck abort_exit_s later);
 *   5. the step loop (the runtime updates the progress record; the launcher
 *      installs ts_hang_fault_hook as the device hook and calls
 *      ts_hang_fault_before_input before feeding each step's inputs);
 *   6. on a step error: store activity TS_HANG_FAILED and error in the
 *      progress record first, then stop;
 *   7. every rank: ts_hang_worker_stop (sends the final state and BYE, gets
 *      the straggler lines back), rank 0 prints ts_hang_worker_stragglers,
 *      ts_hang_worker_destroy, then ts_rt_device_destroy (the heartbeat
 *      thread reads progress->comms until it is stopped);
 *   8. rank 0: ts_hang_coordinator_wait (reaps the coordinator, deadline);
 *      exit non-zero when ts_hang_worker_aborted said so.
 *
 * Thread safety: a worker handle is used by one thread (the launcher's);
 * the heartbeat thread is internal. Everything else is plain functions. */
#ifndef TS_HANG_H
#define TS_HANG_H

#include <sys/types.h>

#include "ts_common.h"
#include "ts_hang_progress.h"

/* ---- what a worker reports --------------------------------------------- */

#define TS_HANG_HOST_MAX 64    /* bytes with the NUL, as ts_hang_progress_t.host */
#define TS_HANG_MODULE_MAX 128 /* as ts_hang_progress_t.module_name */
#define TS_HANG_INSTR_MAX 96
#define TS_HANG_TEXT_MAX 512
#define TS_HANG_SECRET_MAX 64  /* characters of a job secret */
#define TS_HANG_AUTH_MAX 64    /* hex characters of a nonce or an HMAC-SHA256 */
#define TS_HANG_COLLS 8        /* collective records sent per state */
#define TS_HANG_FLIGHT 64      /* the flight recorder: newest records sent with a state request's answer */

/* One collective record as sent (ts_coll_record_t with times turned into
 * ages: seconds before the state was taken, -1 when the state was not
 * reached). `comm` is the communicator's context id. */
typedef struct {
  uint32_t comm;
  uint64_t seq;
  int32_t kind;       /* ts_coll_kind_t */
  int32_t state;      /* ts_coll_state_t */
  int32_t status;     /* ts_status_t */
  int32_t peer;       /* communicator rank, -1 none */
  int32_t waiting_on; /* world rank, -1 none/unknown */
  uint64_t bytes;
  double age_posted_s, age_started_s, age_completed_s;
} ts_hang_coll_t;

/* What the coordinator knows of one worker. */
typedef enum {
  TS_HANG_WORKER_NEVER_CONNECTED,
  TS_HANG_WORKER_OK,          /* connected, reporting */
  TS_HANG_WORKER_FINISHED,    /* said goodbye */
  TS_HANG_WORKER_DEAD,        /* connection lost without goodbye, or silent past the deadline */
  TS_HANG_WORKER_NO_RESPONSE, /* connected but did not answer the state request in time */
  TS_HANG_WORKER_LEFT,        /* left (died, failed or was cancelled) after the first event: a bystander */
  TS_HANG_WORKER_CANCELLED,   /* stopped by its launcher or the terminal (SIGINT/SIGTERM from there) */
} ts_hang_worker_status_t;

typedef struct {
  /* identity (HELLO) */
  int32_t rank, size, pid;
  char host[TS_HANG_HOST_MAX];
  char module[TS_HANG_MODULE_MAX];
  uint64_t fingerprint, launch_id;
  /* hot fields (STATE) */
  uint64_t progress;
  int64_t step;
  int32_t activity; /* ts_hang_activity_t */
  int32_t instr;
  char instr_name[TS_HANG_INSTR_MAX];
  int32_t error;      /* ts_status_t, TS_OK unless FAILED */
  int32_t waiting_on; /* progress->waiting_on1 - 1: world rank, -1 none */
  double progress_age_s; /* seconds since the last progress bump */
  uint64_t last_step_ns, last_compute_ns, last_collective_ns;
  int32_t ncolls;
  ts_hang_coll_t colls[TS_HANG_COLLS]; /* unfinished ones first, then the newest finished per comm */
  /* The flight recorder (as PyTorch's): the newest TS_HANG_FLIGHT records
   * of every communicator together, oldest first (FLIGHT, digest only). */
  int32_t nflight;
  ts_hang_coll_t flight[TS_HANG_FLIGHT];
  /* the coordinator's view */
  int32_t status;        /* ts_hang_worker_status_t */
  double event_time;     /* unix seconds: death, failure, or last progress */
  char note[128];        /* "connection lost", "no answer within 1.0 s", ... */
} ts_hang_state_t;

const char *ts_hang_activity_name(int activity); /* "idle", "compute", "collective", "input", "finished", "failed" */
const char *ts_hang_worker_status_name(int status); /* "never_connected", "ok", ... */

/* ---- classification ------------------------------------------------------ */

typedef enum {
  TS_HANG_CAUSE_BAD_DEVICE,
  TS_HANG_CAUSE_NETWORKING,
  TS_HANG_CAUSE_DIFFERENT_MODULES,
  TS_HANG_CAUSE_FINGERPRINT_MISMATCH,
  TS_HANG_CAUSE_DATA_INPUT_STALL,
  TS_HANG_CAUSE_UNRECOVERABLE_ERROR,
  TS_HANG_CAUSE_UNKNOWN,
  TS_HANG_CAUSE_COUNT
} ts_hang_cause_t;

const char *ts_hang_cause_key(ts_hang_cause_t c);   /* JSON: "bad_device", "networking", ... */
const char *ts_hang_cause_title(ts_hang_cause_t c); /* text: "Bad device", "Networking issue", ... */
bool ts_hang_cause_from_key(const char *s, ts_hang_cause_t *out);

/* The classifier's answer. Culprits are the laggards, never a healthy
 * worker that merely waits: for a networking issue the two ends of each
 * broken link (when one host is an end of several broken links, that
 * host's ends stand for those links: the other ends are not blamed). */
typedef struct {
  ts_hang_cause_t cause;
  int nculprits;
  int32_t *culprits;    /* world ranks, ascending; owned */
  int npairs;
  int32_t (*pairs)[2];  /* networking: broken links {waiter side, other side}, lower rank first; owned */
  char host[TS_HANG_HOST_MAX]; /* networking: the host recurring in the broken links, "" none */
  int first_error_rank; /* the culprit whose event came first, -1 none */
  char reason[256];     /* one line: what the classifier saw */
} ts_hang_verdict_t;

/* Classifies the states of all `n` workers (index = rank; every state must
 * be filled, status NEVER_CONNECTED for the missing). Rules, in order:
 * dead/failed workers (unrecoverable error) > module names differ (the
 * minority) > fingerprints differ (the minority) > workers waiting for input
 * > workers that stopped answering the state request while every worker
 * that answers waits in a collective (bad device: a frozen process or
 * host; their stale heartbeat is not trusted) > broken links (a waiter
 * whose peer already passed that collective, or two workers waiting on
 * each other) > workers stuck in compute while
 * others wait (bad device; all in compute: unknown) > unknown. */
ts_status_t ts_hang_classify(const ts_hang_state_t *w, int n, ts_hang_verdict_t *out);
void ts_hang_verdict_free(ts_hang_verdict_t *v); /* frees the arrays; NULL is a no-op */

/* ---- digests -------------------------------------------------------------- */

#define TS_HANG_DIGEST_VERSION 1

typedef struct {
  ts_hang_verdict_t verdict;
  char first_error_timestamp[40]; /* ISO 8601 UTC, "" none */
  char first_error_type[160];
  char detected_at[40];
  double hang_timeout_s;
  int32_t coordinator_pid;
  int nworkers;
  ts_hang_state_t *workers;       /* owned, index = rank */
  char *stragglers;               /* owned, newline-separated lines, NULL none */
  char checkpoint[512];           /* the newest complete checkpoint (DIR/step-K) at detection, "" none */
} ts_hang_digest_t;

/* The text of megascale.md's digests ("Tessera detects a hang that is
 * likely caused by ..."), appended to `out`. */
void ts_hang_digest_text(const ts_hang_digest_t *d, ts_buf_t *out);
/* The JSON form (keys: version, cause, cause_title, culprits [{rank, host}],
 * hosts, pairs, reason, first_error_timestamp, first_error_type,
 * detected_at, hang_timeout_s, coordinator_pid, stragglers, workers [...]);
 * *out is owned by the caller (ts_free). */
ts_status_t ts_hang_digest_json(const ts_hang_digest_t *d, char **out);
/* Reads the JSON form back (what `tessera diagnose` does); `path` names
 * the file in errors. */
ts_status_t ts_hang_digest_parse_json(const char *text, size_t len, const char *path, ts_hang_digest_t *out,
                                      ts_diag_t *diag);
void ts_hang_digest_free(ts_hang_digest_t *d); /* NULL is a no-op */
/* Where the ranks' collective sequences diverge, from the workers' flight
 * records (per communicator: how far each rank completed, what it has in
 * flight; the first seq not every rank completed, split into the ranks that
 * completed it, posted it, and never posted it; a seq with different kinds
 * or sizes on two ranks is a MISMATCH), appended to `out`. */
void ts_hang_digest_collectives(const ts_hang_digest_t *d, ts_buf_t *out);

/* Formats unix seconds as "2025-01-02T03:04:05.678Z" (n >= 32). */
void ts_hang_format_time(double unix_s, char *buf, size_t n);

/* ---- stragglers ---------------------------------------------------------- */

/* Tracks per-worker step latencies from heartbeats. Busy time (step time
 * minus time waiting in collectives) is what a slow worker shows: in a
 * synchronous SPMD step every worker's total step time is the same. A
 * worker is a straggler when its busy time is above `ratio` times the
 * median of the others in each of its last 3 samples, and at least
 * `min_extra_s` above it. Lines name the host and the rank. */
typedef struct ts_hang_stragglers ts_hang_stragglers_t;

ts_status_t ts_hang_stragglers_create(int nworkers, double ratio, double min_extra_s, ts_hang_stragglers_t **out);
void ts_hang_stragglers_destroy(ts_hang_stragglers_t *s);
/* One finished step of `rank` (samples with a step no newer than the last are ignored). */
void ts_hang_stragglers_add(ts_hang_stragglers_t *s, int rank, const char *host, int64_t step, uint64_t step_ns,
                            uint64_t compute_ns, uint64_t collective_ns);
/* Appends one line per straggler (and a per-host line when several hosts
 * exist and every worker of the slow host is slow) to `out`; returns how many
 * workers are stragglers now. */
int ts_hang_stragglers_report(const ts_hang_stragglers_t *s, ts_buf_t *out);

/* ---- the wire protocol ---------------------------------------------------- */

/* Frames: 12-byte header (magic "TSH1", type u8, flags u8, reserved u16,
 * payload length u32, little endian) + payload (at most TS_HANG_MSG_MAX).
 * Authentication is challenge-response (the secret never travels): the
 * worker's HELLO carries its identity and a nonce; the coordinator answers
 * CHALLENGE with its own nonce; the worker proves it knows the secret with
 * AUTH = HMAC-SHA256(secret, "tessera-hang-1 worker " + coordinator nonce +
 * " " + worker nonce + " " + rank); WELCOME carries the coordinator's proof
 * (the same with "coordinator" and the nonces swapped), which the worker
 * checks: a process that does not know the secret can neither join nor
 * pose as the coordinator (its ABORT would stop the job). Anything else,
 * a wrong MAC or a malformed frame closes the connection. */
typedef enum {
  TS_HANG_MSG_HELLO = 1,     /* w->c: nonce (auth) + identity */
  TS_HANG_MSG_WELCOME,       /* c->w: the coordinator's proof (auth) */
  TS_HANG_MSG_REJECT,        /* c->w: text says why; then close */
  TS_HANG_MSG_STATE,         /* w->c: hot fields + collectives (request != 0 answers STATE_REQUEST) */
  TS_HANG_MSG_STATE_REQUEST, /* c->w: answer now with STATE carrying `request` */
  TS_HANG_MSG_ABORT,         /* c->w: text is the digest's headline */
  TS_HANG_MSG_NOTE,          /* c->w: straggler lines */
  TS_HANG_MSG_BYE,           /* w->c: finished (after a final STATE) */
  TS_HANG_MSG_BYE_ACK,       /* c->w: text: straggler lines, then close */
  TS_HANG_MSG_CANCEL,        /* w->c: the process got SIGINT/SIGTERM/SIGHUP; text: 'L' (from the launcher or
                              * the terminal) or 'O' (another process), then "SIGTERM from pid N ..." */
  TS_HANG_MSG_CHALLENGE,     /* c->w: the coordinator's nonce (auth) */
  TS_HANG_MSG_AUTH,          /* w->c: the worker's proof (auth) */
  TS_HANG_MSG_FLIGHT,        /* w->c: after a STATE answering `request`: the flight recorder (state.flight) */
  TS_HANG_MSG_TYPE_END
} ts_hang_msg_type_t;

#define TS_HANG_MSG_HEADER 12
#define TS_HANG_MSG_MAX 8192

typedef struct {
  int type;                              /* ts_hang_msg_type_t */
  uint32_t request;                      /* STATE, STATE_REQUEST */
  char auth[TS_HANG_AUTH_MAX + 1];       /* HELLO, CHALLENGE: a nonce; AUTH, WELCOME: a MAC (hex) */
  ts_hang_state_t state;                 /* HELLO: identity; STATE: hot fields */
  char text[TS_HANG_TEXT_MAX];           /* REJECT, ABORT, NOTE, BYE_ACK */
} ts_hang_msg_t;

/* Encodes `m` into buf; returns the frame's size, 0 when cap is too small. */
size_t ts_hang_msg_encode(const ts_hang_msg_t *m, uint8_t *buf, size_t cap);
/* Decodes the first frame of buf[0..len): TS_OK (*consumed = its size),
 * TS_INPROGRESS (a partial frame: read more), TS_ERR_PARSE (malformed:
 * bad magic, unknown type, oversized, truncated or trailing fields, a
 * string too long or with control bytes, a value out of range). */
ts_status_t ts_hang_msg_decode(const uint8_t *buf, size_t len, ts_hang_msg_t *out, size_t *consumed);

/* 32 random hex characters + NUL (secrets, nonces). */
ts_status_t ts_hang_secret_generate(char out[33]);
/* HMAC-SHA256(secret, "tessera-hang-1 " role " " n1 " " n2 " " rank) as 64
 * hex characters + NUL: the proofs of the handshake above (role "worker":
 * n1 the coordinator's nonce; "coordinator": n1 the worker's). */
void ts_hang_auth_mac(const char *secret, const char *role, const char *n1, const char *n2, int rank, char out[65]);
/* HMAC-SHA256 of data as hex (64 + NUL); public for its test vectors. */
void ts_hang_hmac_sha256_hex(const char *key, const void *data, size_t len, char out[65]);
/* Compares two strings in time independent of where they differ. */
bool ts_hang_auth_equal(const char *a, const char *b);

/* What rank 0 broadcasts to the others: fixed size, NUL-terminated. */
typedef struct {
  char addr[128];
  char secret[TS_HANG_SECRET_MAX + 1];
  char launch_id[17]; /* 16 random hex digits of its own (the secret is never shown) */
} ts_hang_rendezvous_t;

/* ---- workers ----------------------------------------------------------- */

/* This rank's host name: entry `rank` of TESSERA_HOSTS (a comma list, for
 * emulating several hosts on one machine) when set, else gethostname(). */
void ts_hang_host_name(int rank, char *buf, size_t n);

/* Fills the identity of a progress record (module name truncated to fit,
 * host from ts_hang_host_name) and sets its hot fields to "idle, step 0,
 * waiting_on1 0, instr -1". */
void ts_hang_identity_fill(ts_hang_progress_t *p, const char *module_name, uint64_t fingerprint, uint64_t launch_id,
                           int rank, int size);

/* Called on the heartbeat thread when the coordinator says abort; `reason`
 * is the digest's headline. Must not block long: set flags, abort the
 * collectives world (ts_coll_comm_abort is safe from another thread). */
typedef void (*ts_hang_abort_fn)(void *arg, const char *reason);

typedef struct {
  const char *addr;           /* "host:port" of the coordinator */
  const char *secret;
  ts_hang_progress_t *progress; /* identity filled; instr_names/comms set, and not changed until stop */
  double period_s;            /* heartbeat period (default 1; <= hang timeout / 4 keeps detection tight) */
  double connect_timeout_s;   /* connect + HELLO/WELCOME, retrying while refused (default 30) */
  ts_hang_abort_fn on_abort;  /* NULL: none */
  void *abort_arg;
  double abort_exit_s;        /* after on_abort: _exit(abort_exit_code) unless stopped within this (default 10; < 0 never) */
  int abort_exit_code;        /* default 4 */
} ts_hang_worker_opts_t;

void ts_hang_worker_opts_default(ts_hang_worker_opts_t *o);

typedef struct ts_hang_worker ts_hang_worker_t;

/* Connects, authenticates (TS_ERR_REMOTE with the coordinator's reason when
 * rejected, TS_ERR_TIMEOUT when it cannot be reached in time) and starts
 * the heartbeat thread. */
ts_status_t ts_hang_worker_start(const ts_hang_worker_opts_t *o, ts_hang_worker_t **out, ts_diag_t *diag);
/* Sends the final state and BYE, waits up to timeout_s for the
 * coordinator's answer (the straggler lines), joins the thread. Idempotent.
 * TS_ERR_TIMEOUT when the answer did not come (the thread is joined anyway). */
ts_status_t ts_hang_worker_stop(ts_hang_worker_t *w, double timeout_s);
/* Whether the coordinator told this worker to abort (and why, when reason != NULL). */
bool ts_hang_worker_aborted(ts_hang_worker_t *w, char *reason, size_t n);
/* Straggler lines the coordinator sent (after stop: its final report); ""
 * when none. Valid until destroy; call from the owner thread. */
const char *ts_hang_worker_stragglers(ts_hang_worker_t *w);
/* Whether the connection to the coordinator is up (false once it went away). */
bool ts_hang_worker_connected(ts_hang_worker_t *w);
void ts_hang_worker_destroy(ts_hang_worker_t *w); /* stops first if needed; NULL is a no-op */

/* Snapshot of a progress record as a STATE would carry it (the heartbeat
 * thread's reader, public for tests and benchmarks). */
void ts_hang_progress_snapshot(const ts_hang_progress_t *p, ts_hang_state_t *out);

/* ---- the coordinator ----------------------------------------------------- */

typedef struct {
  const char *listen;         /* "host:port"; port 0 picks a free one */
  int world;                  /* number of workers (ranks 0..world-1) */
  const char *secret;
  double hang_timeout_s;      /* default 60 */
  const char *digest_path;    /* JSON digest, NULL: none */
  bool abort_on_hang;         /* default true */
  double gather_timeout_s;    /* out-of-band state collection (default 2) */
  double connect_timeout_s;   /* all workers must connect within (default 300) */
  double silence_timeout_s;   /* a connected worker silent this long is dead (default max(3 * hang timeout, 30)) */
  double exit_timeout_s;      /* after the abort, wait this long for workers to leave (default 10) */
  double straggler_ratio;     /* default 1.5 */
  double straggler_min_s;     /* default 0.002 */
  bool quiet;                 /* no info lines on stderr (digests and stragglers still) */
  const char *checkpoint_dir; /* the run's checkpoints: the digest names the newest complete one; NULL none */
  /* The job around it (0: not watched). The coordinator leaves, without a
   * digest, when its parent (the process that started it) is gone or the
   * launch's process group is empty while a worker has yet to connect; a
   * worker's death once `launcher_pid` (the parent's parent: mpirun, its
   * daemon, or the shell) is gone is a cancellation, not a culprit. */
  int parent_pid, launcher_pid, launch_pgid;
} ts_hang_coord_opts_t;

void ts_hang_coord_opts_default(ts_hang_coord_opts_t *o);

typedef struct ts_hang_coord ts_hang_coord_t;

/* Binds the listening socket (errors: TS_ERR_INVALID_ARGUMENT for a bad
 * address, TS_ERR_SYSTEM when it cannot bind). */
ts_status_t ts_hang_coord_create(const ts_hang_coord_opts_t *o, ts_hang_coord_t **out, ts_diag_t *diag);
/* The bound address, "host:port" (the real port when 0 was asked). */
const char *ts_hang_coord_addr(const ts_hang_coord_t *c);
/* Serves until every worker said goodbye (returns 0), or until the job was
 * cancelled (returns 5 after one line on stderr, no digest: the user
 * stopped it, nothing to diagnose: SIGINT/SIGTERM/SIGHUP from the launcher
 * or the terminal, such a signal to the one process holding every rank,
 * or workers dying once the launcher is gone; or the job ended before its
 * workers connected), or after a digest
 * (returns 1: the digest is on stderr and in digest_path; with
 * abort_on_hang the workers were told to abort and have left or the exit
 * timeout passed; without, once every worker left), or when workers never
 * connected (returns 3, after a digest naming them). */
int ts_hang_coord_run(ts_hang_coord_t *c);
/* The digest written by run (NULL when none); owned by the coordinator. */
const ts_hang_digest_t *ts_hang_coord_digest(const ts_hang_coord_t *c);
void ts_hang_coord_destroy(ts_hang_coord_t *c);

/* `tessera hang-coordinator` (hidden subcommand):
 *   --listen HOST:PORT --world N [--secret S | env TESSERA_HANG_SECRET]
 *   [--hang-timeout SEC] [--hang-digest FILE] [--abort-on-hang[=true|false]]
 *   [--gather-timeout SEC] [--connect-timeout SEC] [--quiet]
 *   [--parent-pid P] [--launcher-pid P] [--launch-pgid G]
 * Names itself tessera-hang-coordinator (argv[0], and prctl's 15 characters). Prints the bound "host:port" and a newline on stdout, then serves.
 * Exit code: ts_hang_coord_run's, 2 for usage errors. */
int ts_hang_coordinator_main(int argc, char **argv);

/* Starts `exe` (NULL: /proc/self/exe) as `tessera-hang-coordinator
 * hang-coordinator ...` (argv[0]) with the options of `o` (secret through
 * the environment, not argv; parent, launcher and process group are the
 * caller's unless set) in its own session, reads the bound address (up to 10 s) into addr, returns its pid. */
ts_status_t ts_hang_coordinator_spawn(const ts_hang_coord_opts_t *o, const char *exe, char *addr, size_t addr_len,
                                      pid_t *pid, ts_diag_t *diag);
/* Reaps a spawned coordinator: waits up to timeout_s, then SIGKILLs it.
 * *exit_code (may be NULL): its exit code, or 128 + signal. */
ts_status_t ts_hang_coordinator_wait(pid_t pid, double timeout_s, int *exit_code);

/* ---- fault injection (TESSERA_FAULT) ------------------------------------- */

typedef enum {
  TS_HANG_FAULT_NONE,
  TS_HANG_FAULT_STALL,       /* stall:rank=R|all:step=K      stuck in compute from step K */
  TS_HANG_FAULT_CRASH,       /* crash:rank=R:step=K          the process dies (SIGKILL) */
  TS_HANG_FAULT_NETDROP,     /* netdrop:ranks=A,B:step=K     A and B stop exchanging data */
  TS_HANG_FAULT_MODULE,      /* module:rank=R[:step=K]       R runs another module */
  TS_HANG_FAULT_FINGERPRINT, /* fingerprint:rank=R[:step=K]  same name, other fingerprint */
  TS_HANG_FAULT_INPUT_STALL, /* input-stall:rank=R:step=K    R's input feeder stops */
  TS_HANG_FAULT_SLOW,        /* slow:rank=R[:step=K][:seconds=S] */
} ts_hang_fault_kind_t;

typedef struct {
  ts_hang_fault_kind_t kind;
  int32_t rank;      /* -1: every rank (stall:rank=all) */
  int32_t rank_b;    /* netdrop: the other end */
  int64_t step;      /* from 1; 0: every step (slow) / step 1 (module, fingerprint) */
  double seconds;    /* slow: the step takes this long; 0: every op sleeps TS_HANG_SLOW_OP_S */
} ts_hang_fault_t;

#define TS_HANG_SLOW_OP_S 0.005

/* Parses a TESSERA_FAULT value (NULL or "": kind NONE). Errors name the
 * spec and what is wrong ("TESSERA_FAULT: error: ..."): TS_ERR_INVALID_USAGE. */
ts_status_t ts_hang_fault_parse(const char *spec, ts_hang_fault_t *out, ts_diag_t *diag);
/* Whether the fault involves `rank`. */
bool ts_hang_fault_hits(const ts_hang_fault_t *f, int rank);

/* module:/fingerprint: faults alter the identity this rank reports
 * (module: name + ".other" and another fingerprint; fingerprint: another
 * fingerprint). Call after ts_hang_identity_fill; no-op for other faults. */
void ts_hang_fault_identity(const ts_hang_fault_t *f, ts_hang_progress_t *p);

/* The runtime hook (ts_rt_hook_fn-compatible: pass ts_hang_fault_hook and
 * the hook object as hook_arg). What each fault does on its ranks, at step K:
 *   stall:       activity COMPUTE at the instruction, sleeps until aborted;
 *   crash:       prints one line, raise(SIGKILL);
 *   netdrop:     before the first collective instruction (the first
 *                instruction when none is marked) both ends set activity
 *                COLLECTIVE with progress->waiting_on1 naming each other and
 *                wait until aborted: an emulated link whose messages stop
 *                (the real transport is not touched; the others then wait
 *                for A and B in their collective);
 *   module/fingerprint: like netdrop but waiting on nobody (the peers never
 *                post the collective R's other program posts);
 *   slow:        sleeps seconds / (entry instructions seen in the previous
 *                step, else the marked instructions outside fused
 *                computations, else progress->ninstrs) before every instruction of
 *                step K (every step when step is 0), or TS_HANG_SLOW_OP_S
 *                per op without seconds: the step is slow but progresses.
 * Returns TS_ERR_REMOTE once aborted (ts_hang_fault_hook_abort). */
typedef struct {
  ts_hang_fault_t fault;
  int rank;
  ts_hang_progress_t *progress;
  const bool *is_collective; /* per instr index, NULL: unknown (see ts_hang_fault_hook_mark) */
  int ninstrs;
  int stepped;               /* marked instructions outside fused computations (they run as steps) */
  _Atomic int aborted;
  int64_t cur_step;
  int calls_this_step, calls_prev_step;
  bool fired;
  double t_fired;            /* ts_coll_now() when a stall/netdrop/... began, 0 not yet */
} ts_hang_fault_hook_t;

void ts_hang_fault_hook_init(ts_hang_fault_hook_t *h, const ts_hang_fault_t *f, int rank, ts_hang_progress_t *p);
/* Marks which instructions are collectives: names[i] looked up in `module`
 * (a const ts_hlo_module_t *; instruction names are module-unique). The
 * array is owned by the hook (freed by ts_hang_fault_hook_fini). */
ts_status_t ts_hang_fault_hook_mark(ts_hang_fault_hook_t *h, const void *module, const char *const *names, int n);
void ts_hang_fault_hook_fini(ts_hang_fault_hook_t *h);
ts_status_t ts_hang_fault_hook(void *arg, int64_t step, int instr);
/* The launcher's input feeder calls this before filling step `step`'s
 * inputs: for input-stall on this rank it sets activity INPUT_WAIT and waits
 * until aborted (TS_ERR_REMOTE); otherwise TS_OK at once. */
ts_status_t ts_hang_fault_before_input(ts_hang_fault_hook_t *h, int64_t step);
/* Makes every wait of the hook return TS_ERR_REMOTE (from any thread). */
void ts_hang_fault_hook_abort(ts_hang_fault_hook_t *h);

#endif
