/* The classifier: from every worker's state at the hang, the likely cause
 * and its culprits (MXLA RapidEye's causes, shared/seeds/megascale.md).
 * Culprits are laggards: the worker that stopped the others, never a
 * healthy worker that merely waits for it. */
#include <string.h>

#include "hang_internal.h"
#include "ts_coll.h"

static const char *const cause_keys[] = {"bad_device",           "networking",       "different_modules",
                                         "fingerprint_mismatch", "data_input_stall", "unrecoverable_error",
                                         "unknown"};
static const char *const cause_titles[] = {"Bad device",           "Networking issue", "Different modules",
                                           "Fingerprint mismatch", "Data input stall", "Unrecoverable error",
                                           "Unknown"};

const char *ts_hang_cause_key(ts_hang_cause_t c) {
  return c >= 0 && c < TS_HANG_CAUSE_COUNT ? cause_keys[c] : "unknown";
}
const char *ts_hang_cause_title(ts_hang_cause_t c) {
  return c >= 0 && c < TS_HANG_CAUSE_COUNT ? cause_titles[c] : "Unknown";
}
bool ts_hang_cause_from_key(const char *s, ts_hang_cause_t *out) {
  for (int i = 0; i < TS_HANG_CAUSE_COUNT; i++)
    if (s && strcmp(s, cause_keys[i]) == 0) {
      *out = (ts_hang_cause_t)i;
      return true;
    }
  return false;
}

void ts_hang_verdict_free(ts_hang_verdict_t *v) {
  if (!v) return;
  ts_free(v->culprits);
  ts_free(v->pairs);
  v->culprits = NULL;
  v->pairs = NULL;
  v->nculprits = v->npairs = 0;
}

static bool reporting(const ts_hang_state_t *s) { return s->status != TS_HANG_WORKER_NEVER_CONNECTED; }
static bool alive(const ts_hang_state_t *s) {
  return s->status == TS_HANG_WORKER_OK || s->status == TS_HANG_WORKER_NO_RESPONSE || s->status == TS_HANG_WORKER_LEFT;
}

static void add_culprit(ts_hang_verdict_t *v, int rank) {
  for (int i = 0; i < v->nculprits; i++)
    if (v->culprits[i] == rank) return;
  int i = v->nculprits++;
  while (i > 0 && v->culprits[i - 1] > rank) { /* keep ascending */
    v->culprits[i] = v->culprits[i - 1];
    i--;
  }
  v->culprits[i] = rank;
}

/* The culprit whose event came first. */
static void pick_first(const ts_hang_state_t *w, ts_hang_verdict_t *v) {
  v->first_error_rank = -1;
  for (int i = 0; i < v->nculprits; i++) {
    int r = v->culprits[i];
    if (v->first_error_rank < 0 || (w[r].event_time > 0 && w[r].event_time < w[v->first_error_rank].event_time))
      v->first_error_rank = r;
  }
}

/* ---- unrecoverable errors ---------------------------------------------------- */

static bool unrecoverable(const ts_hang_state_t *w, int n, ts_hang_verdict_t *v) {
  /* Root failures first: deaths, workers that never came, and errors of the
   * worker's own. A peer's abort (REMOTE) or a collective deadline
   * (TIMEOUT) is a consequence; they are culprits only when nothing else is. */
  for (int i = 0; i < n; i++) {
    bool failed = w[i].activity == TS_HANG_FAILED && reporting(&w[i]);
    if (w[i].status == TS_HANG_WORKER_DEAD || w[i].status == TS_HANG_WORKER_NEVER_CONNECTED ||
        (failed && w[i].error != TS_ERR_REMOTE && w[i].error != TS_ERR_TIMEOUT))
      add_culprit(v, i);
  }
  for (int pass = 0; pass < 2 && v->nculprits == 0; pass++)
    for (int i = 0; i < n; i++)
      if (w[i].activity == TS_HANG_FAILED && reporting(&w[i]) &&
          w[i].error == (pass == 0 ? TS_ERR_TIMEOUT : TS_ERR_REMOTE))
        add_culprit(v, i);
  if (!v->nculprits) return false;
  v->cause = TS_HANG_CAUSE_UNRECOVERABLE_ERROR;
  pick_first(w, v);
  const ts_hang_state_t *f = &w[v->first_error_rank];
  if (f->status == TS_HANG_WORKER_NEVER_CONNECTED)
    snprintf(v->reason, sizeof v->reason, "rank %d never connected to the coordinator", f->rank);
  else if (f->status == TS_HANG_WORKER_DEAD)
    snprintf(v->reason, sizeof v->reason, "rank %d died: %s", f->rank, f->note[0] ? f->note : "connection lost");
  else
    snprintf(v->reason, sizeof v->reason, "rank %d failed with %s at step %lld", f->rank,
             ts_status_string((ts_status_t)f->error), (long long)f->step);
  return true;
}

/* ---- programs that differ ---------------------------------------------------- */

/* Groups reporting workers by module name (by_fp: by fingerprint); when
 * there are several groups, the culprits are every worker outside the
 * largest group (ties: the group of the lowest rank is the reference). */
static bool minority(const ts_hang_state_t *w, int n, bool by_fp, ts_hang_verdict_t *v) {
  int ref = -1, refcount = 0, groups = 0;
  for (int i = 0; i < n; i++) {
    if (!reporting(&w[i])) continue;
    bool first = true; /* first of its group? */
    for (int j = 0; j < i && first; j++)
      if (reporting(&w[j]) && (by_fp ? w[j].fingerprint == w[i].fingerprint : !strcmp(w[j].module, w[i].module)))
        first = false;
    if (!first) continue;
    groups++;
    int count = 0;
    for (int j = i; j < n; j++)
      if (reporting(&w[j]) && (by_fp ? w[j].fingerprint == w[i].fingerprint : !strcmp(w[j].module, w[i].module)))
        count++;
    if (count > refcount) {
      refcount = count;
      ref = i;
    }
  }
  if (groups < 2) return false;
  for (int i = 0; i < n; i++)
    if (reporting(&w[i]) &&
        !(by_fp ? w[i].fingerprint == w[ref].fingerprint : !strcmp(w[i].module, w[ref].module)))
      add_culprit(v, i);
  v->cause = by_fp ? TS_HANG_CAUSE_FINGERPRINT_MISMATCH : TS_HANG_CAUSE_DIFFERENT_MODULES;
  pick_first(w, v);
  const ts_hang_state_t *c = &w[v->culprits[0]];
  if (by_fp)
    snprintf(v->reason, sizeof v->reason, "%d of %d workers run %.80s with fingerprint %016llx, rank %d %016llx",
             refcount, n, w[ref].module, (unsigned long long)w[ref].fingerprint, c->rank,
             (unsigned long long)c->fingerprint);
  else
    snprintf(v->reason, sizeof v->reason, "%d of %d workers run module %.80s, rank %d runs %.80s", refcount, n,
             w[ref].module, c->rank, c->module);
  return true;
}

/* ---- input ------------------------------------------------------------------ */

static bool input_stall(const ts_hang_state_t *w, int n, ts_hang_verdict_t *v) {
  for (int i = 0; i < n; i++)
    /* (A silent worker's "input" is stale: it may have frozen there.) */
    if (alive(&w[i]) && w[i].status != TS_HANG_WORKER_NO_RESPONSE && w[i].activity == TS_HANG_INPUT_WAIT)
      add_culprit(v, i);
  if (!v->nculprits) return false;
  v->cause = TS_HANG_CAUSE_DATA_INPUT_STALL;
  pick_first(w, v);
  snprintf(v->reason, sizeof v->reason, "%d worker(s) waiting for input at step %lld (first: rank %d)",
           v->nculprits, (long long)w[v->first_error_rank].step, v->first_error_rank);
  return true;
}

/* ---- frozen workers ------------------------------------------------------------ */

/* Workers that stopped answering while every worker that answers waits in
 * a collective: a frozen process or host (SIGSTOP, a hung kernel driver, a
 * host out of memory). Their last heartbeat is stale, so what they said
 * they were doing cannot be trusted; the fact that they alone went silent
 * while their peers wait is what tells them apart. A worker that answered
 * and is in compute is a better suspect (bad_device below); workers that
 * left after the first error are bystanders. */
static bool frozen(const ts_hang_state_t *w, int n, ts_hang_verdict_t *v) {
  int silent = 0, waiting = 0, waiting_on_silent = 0;
  for (int i = 0; i < n; i++) {
    if (w[i].status == TS_HANG_WORKER_NO_RESPONSE) {
      silent++;
    } else if (w[i].status == TS_HANG_WORKER_OK) {
      if (w[i].activity == TS_HANG_COMPUTE || w[i].activity == TS_HANG_INPUT_WAIT) return false;
      if (w[i].activity == TS_HANG_COLLECTIVE) waiting++;
    }
  }
  if (!silent || !waiting) return false;
  for (int i = 0; i < n; i++)
    if (w[i].status == TS_HANG_WORKER_NO_RESPONSE) add_culprit(v, i);
  for (int i = 0; i < n; i++) {
    if (w[i].status != TS_HANG_WORKER_OK || w[i].activity != TS_HANG_COLLECTIVE) continue;
    int t = w[i].waiting_on;
    for (int k = 0; k < w[i].ncolls && t < 0; k++)
      if (w[i].colls[k].state == TS_COLL_POSTED || w[i].colls[k].state == TS_COLL_STARTED) t = w[i].colls[k].waiting_on;
    if (t >= 0 && t < n && w[t].status == TS_HANG_WORKER_NO_RESPONSE) waiting_on_silent++;
  }
  v->cause = TS_HANG_CAUSE_BAD_DEVICE;
  pick_first(w, v);
  const ts_hang_state_t *f = &w[v->first_error_rank];
  snprintf(v->reason, sizeof v->reason,
           "rank %d stopped answering (process or host frozen; last seen at step %lld) while %d worker(s) wait in "
           "collectives, %d of them on it",
           f->rank, (long long)f->step, waiting, waiting_on_silent);
  return true;
}

/* ---- links ------------------------------------------------------------------- */

/* The collective a waiting worker is stuck in: its oldest unfinished record. */
static const ts_hang_coll_t *stuck_record(const ts_hang_state_t *s) {
  const ts_hang_coll_t *best = NULL;
  for (int i = 0; i < s->ncolls; i++) {
    const ts_hang_coll_t *c = &s->colls[i];
    if (c->state != TS_COLL_POSTED && c->state != TS_COLL_STARTED) continue;
    if (!best || c->age_posted_s > best->age_posted_s) best = c;
  }
  return best;
}

/* Whom a waiting worker waits for: the progress record's peer (set when the
 * records cannot say it), else its stuck collective's. -1: unknown. */
static int target_of(const ts_hang_state_t *s, int n) {
  if (!alive(s) || s->activity != TS_HANG_COLLECTIVE) return -1;
  int t = s->waiting_on;
  if (t < 0) {
    const ts_hang_coll_t *c = stuck_record(s);
    if (c) t = c->waiting_on;
  }
  return t >= 0 && t < n && t != s->rank ? t : -1;
}

/* Whether worker t already got past collective `c` (same communicator):
 * its record of that seq completed, or it posted a later one. Then data t
 * sent never arrived: the link, not t, is at fault. */
static bool passed(const ts_hang_state_t *t, const ts_hang_coll_t *c) {
  for (int i = 0; i < t->ncolls; i++) {
    const ts_hang_coll_t *r = &t->colls[i];
    if (r->comm != c->comm) continue;
    if (r->seq > c->seq || (r->seq == c->seq && r->state == TS_COLL_COMPLETED)) return true;
  }
  return false;
}

static bool networking(const ts_hang_state_t *w, int n, ts_hang_verdict_t *v) {
  for (int i = 0; i < n; i++) {
    int t = target_of(&w[i], n);
    if (t < 0) continue;
    const ts_hang_coll_t *c = stuck_record(&w[i]);
    bool mutual = target_of(&w[t], n) == i;
    bool sent = c && w[i].waiting_on < 0 && passed(&w[t], c);
    if (!mutual && !sent) continue;
    int a = i < t ? i : t, b = i < t ? t : i, k;
    for (k = 0; k < v->npairs; k++)
      if (v->pairs[k][0] == a && v->pairs[k][1] == b) break;
    if (k == v->npairs) {
      v->pairs[k][0] = a;
      v->pairs[k][1] = b;
      v->npairs++;
    }
  }
  if (!v->npairs) return false;
  v->cause = TS_HANG_CAUSE_NETWORKING;
  /* A host that is an end of several broken links (and more often than any
   * other host, and not every end's host) is the likely faulty one. */
  int best = -1, bestcount = 0, tie = 0;
  bool several_hosts = false;
  for (int k = 0; k < v->npairs; k++)
    for (int e = 0; e < 2; e++) {
      const char *h = w[v->pairs[k][e]].host;
      if (strcmp(h, w[v->pairs[0][0]].host)) several_hosts = true;
      int count = 0;
      for (int q = 0; q < v->npairs; q++)
        if (!strcmp(w[v->pairs[q][0]].host, h) || !strcmp(w[v->pairs[q][1]].host, h)) count++;
      if (count > bestcount) {
        bestcount = count;
        best = v->pairs[k][e];
        tie = 0;
      } else if (count == bestcount && strcmp(w[best].host, h))
        tie = 1;
    }
  if (v->npairs >= 2 && bestcount >= 2 && !tie && several_hosts) {
    /* That host's ends; links it is no end of keep both their ends. */
    ts_hang_strlcpy(v->host, w[best].host, sizeof v->host);
    for (int k = 0; k < v->npairs; k++) {
      bool on0 = !strcmp(w[v->pairs[k][0]].host, v->host), on1 = !strcmp(w[v->pairs[k][1]].host, v->host);
      if (on0 || !on1) add_culprit(v, v->pairs[k][0]);
      if (on1 || !on0) add_culprit(v, v->pairs[k][1]);
    }
  } else {
    for (int k = 0; k < v->npairs; k++) {
      add_culprit(v, v->pairs[k][0]);
      add_culprit(v, v->pairs[k][1]);
    }
  }
  pick_first(w, v);
  if (v->host[0])
    snprintf(v->reason, sizeof v->reason, "%d broken links, host %s is an end of %d of them", v->npairs, v->host,
             bestcount);
  else
    snprintf(v->reason, sizeof v->reason, "rank %d and rank %d wait on each other's data (%d broken link%s)",
             v->pairs[0][0], v->pairs[0][1], v->npairs, v->npairs > 1 ? "s" : "");
  return true;
}

/* ---- devices -------------------------------------------------------------------- */

static bool bad_device(const ts_hang_state_t *w, int n, ts_hang_verdict_t *v) {
  int others = 0;
  for (int i = 0; i < n; i++) {
    if (!alive(&w[i])) continue;
    if (w[i].activity == TS_HANG_COMPUTE)
      add_culprit(v, i);
    else
      others++;
  }
  if (!v->nculprits) return false;
  if (!others) { /* every worker stuck in compute at once: nobody to tell apart */
    v->nculprits = 0;
    return false;
  }
  v->cause = TS_HANG_CAUSE_BAD_DEVICE;
  pick_first(w, v);
  const ts_hang_state_t *f = &w[v->first_error_rank];
  snprintf(v->reason, sizeof v->reason, "rank %d stuck in compute at %s (step %lld) while %d worker(s) wait",
           f->rank, f->instr_name[0] ? f->instr_name : "?", (long long)f->step, others);
  return true;
}

ts_status_t ts_hang_classify(const ts_hang_state_t *w, int n, ts_hang_verdict_t *out) {
  memset(out, 0, sizeof *out);
  out->first_error_rank = -1;
  if (n <= 0) return TS_ERR_INVALID_ARGUMENT;
  out->culprits = ts_calloc((size_t)n, sizeof *out->culprits);
  out->pairs = ts_calloc((size_t)n, sizeof *out->pairs);
  if (!out->culprits || !out->pairs) {
    ts_hang_verdict_free(out);
    return TS_ERR_NOMEM;
  }
  if (unrecoverable(w, n, out) || minority(w, n, false, out) || minority(w, n, true, out) ||
      input_stall(w, n, out) || frozen(w, n, out) || networking(w, n, out) || bad_device(w, n, out))
    return TS_OK;
  out->cause = TS_HANG_CAUSE_UNKNOWN;
  out->nculprits = 0;
  int counts[TS_HANG_FAILED + 1] = {0};
  for (int i = 0; i < n; i++)
    if (w[i].activity >= 0 && w[i].activity <= TS_HANG_FAILED) counts[w[i].activity]++;
  snprintf(out->reason, sizeof out->reason,
           "no culprit can be told apart: %d in compute, %d in collectives, %d idle, %d finished", counts[TS_HANG_COMPUTE],
           counts[TS_HANG_COLLECTIVE], counts[TS_HANG_IDLE], counts[TS_HANG_FINISHED]);
  return TS_OK;
}
