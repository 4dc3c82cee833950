/* Hang digests: the text of MXLA's RapidEye digests (megascale.md,
 * "Interpreting TPU States": cause, culprits, first error, then the
 * workers grouped by launch id, module, fingerprint and where they are),
 * the same content as JSON, and the JSON read back for `tessera diagnose`. */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hang_internal.h"
#include "ts_coll.h"

static const char *const coll_states[] = {"posted", "started", "completed", "failed"};

void ts_hang_format_time(double unix_s, char *buf, size_t n) {
  if (!(unix_s > 0)) {
    ts_hang_strlcpy(buf, "", n);
    return;
  }
  time_t sec = (time_t)unix_s;
  int ms = (int)((unix_s - (double)sec) * 1000);
  if (ms > 999) ms = 999;
  struct tm tm;
  gmtime_r(&sec, &tm);
  char tmp[32];
  strftime(tmp, sizeof tmp, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, n, "%s.%03dZ", tmp, ms);
}

void ts_hang_digest_free(ts_hang_digest_t *d) {
  if (!d) return;
  ts_hang_verdict_free(&d->verdict);
  ts_free(d->workers);
  ts_free(d->stragglers);
  d->workers = NULL;
  d->stragglers = NULL;
  d->nworkers = 0;
}

/* ---- text ----------------------------------------------------------------- */

static void worker_name(ts_buf_t *b, const ts_hang_digest_t *d, int rank) {
  const char *host = rank >= 0 && rank < d->nworkers ? d->workers[rank].host : "?";
  ts_buf_printf(b, "rank %d:%s", rank, host[0] ? host : "?");
}

/* The hosts of the culprits, each once, comma-separated. */
static void culprit_hosts(ts_buf_t *b, const ts_hang_digest_t *d) {
  const ts_hang_verdict_t *v = &d->verdict;
  if (v->host[0]) {
    ts_buf_puts(b, v->host);
    return;
  }
  bool any = false;
  for (int i = 0; i < v->nculprits; i++) {
    int r = v->culprits[i];
    const char *h = r < d->nworkers ? d->workers[r].host : "?";
    bool seen = false;
    for (int j = 0; j < i && !seen; j++)
      seen = v->culprits[j] < d->nworkers && !strcmp(d->workers[v->culprits[j]].host, h);
    if (seen) continue;
    ts_buf_printf(b, "%s%s", any ? ", " : "", h);
    any = true;
  }
  if (!any) ts_buf_puts(b, "(none)");
}

/* Where a worker is, as one key: the breakdown groups workers by it. */
static void location(ts_buf_t *b, const ts_hang_state_t *s) {
  switch (s->status) {
  case TS_HANG_WORKER_NEVER_CONNECTED: ts_buf_puts(b, "never connected"); return;
  case TS_HANG_WORKER_DEAD: ts_buf_printf(b, "dead (%s)", s->note[0] ? s->note : "connection lost"); return;
  default: break;
  }
  ts_buf_printf(b, "step %lld:%s", (long long)s->step, ts_hang_activity_name(s->activity));
  if (s->instr_name[0] && (s->activity == TS_HANG_COMPUTE || s->activity == TS_HANG_COLLECTIVE))
    ts_buf_printf(b, "(%s)", s->instr_name);
  if (s->activity == TS_HANG_FAILED) ts_buf_printf(b, "(%s)", ts_status_string((ts_status_t)s->error));
  if (s->activity == TS_HANG_COLLECTIVE) {
    const ts_hang_coll_t *c = NULL;
    for (int i = 0; i < s->ncolls; i++)
      if ((s->colls[i].state == TS_COLL_POSTED || s->colls[i].state == TS_COLL_STARTED) &&
          (!c || s->colls[i].age_posted_s > c->age_posted_s))
        c = &s->colls[i];
    if (c) ts_buf_printf(b, " seq %llu %s", (unsigned long long)c->seq, ts_coll_kind_name((ts_coll_kind_t)c->kind));
    int t = s->waiting_on >= 0 ? s->waiting_on : c ? c->waiting_on : -1;
    if (t >= 0) ts_buf_printf(b, " waiting on rank %d", t);
  }
  if (s->status == TS_HANG_WORKER_NO_RESPONSE) ts_buf_puts(b, " [no answer to the state request]");
  if (s->status == TS_HANG_WORKER_FINISHED) ts_buf_puts(b, " [left]");
  if (s->status == TS_HANG_WORKER_LEFT) ts_buf_puts(b, " [left after the first error]");
  if (s->status == TS_HANG_WORKER_CANCELLED) ts_buf_puts(b, " [cancelled]");
}

static void headline(ts_buf_t *b, const ts_hang_digest_t *d) {
  const ts_hang_verdict_t *v = &d->verdict;
  switch (v->cause) {
  case TS_HANG_CAUSE_BAD_DEVICE:
    ts_buf_puts(b, "Tessera detects a hang that is likely caused by bad devices on the following hosts. Please "
                   "remove the hosts from the fleet and restart the workload.\n  The hosts that have bad devices "
                   "are: ");
    break;
  case TS_HANG_CAUSE_NETWORKING:
    ts_buf_puts(b, "Tessera detects a hang that is likely caused by a networking issue. Please examine the "
                   "underlying networking stack for the following hosts.\n  The hosts are: ");
    break;
  case TS_HANG_CAUSE_DIFFERENT_MODULES:
    ts_buf_puts(b, "Tessera detects a hang that is likely caused by running different modules on different "
                   "devices. Please confirm that all workers are running the exact same program. It can also be "
                   "caused by a hang in a subset of devices and the unaffected devices have moved on to the next "
                   "program. Please inspect the digest below to further root cause the hang.\n  Example hosts "
                   "that have different HLO modules: ");
    break;
  case TS_HANG_CAUSE_FINGERPRINT_MISMATCH:
    ts_buf_puts(b, "Tessera detects a hang that is likely caused by inconsistent HLO module compilation across "
                   "workers. This is likely a bug in tracing or in the compiler. Please inspect the HLO dumps to "
                   "confirm the root cause.\n  Example hosts that have different HLO fingerprints: ");
    break;
  case TS_HANG_CAUSE_DATA_INPUT_STALL:
    ts_buf_puts(b, "Tessera detects a hang that is likely caused by data input stall on the following hosts. "
                   "Please check the workers to make sure the data input pipeline is working properly.\n  The "
                   "hosts that have data input stalls are: ");
    break;
  case TS_HANG_CAUSE_UNRECOVERABLE_ERROR:
    ts_buf_puts(b, "Some workers have halted with an unrecoverable error:\n");
    for (int i = 0; i < v->nculprits; i++) {
      int r = v->culprits[i];
      ts_buf_puts(b, "  ");
      worker_name(b, d, r);
      ts_buf_puts(b, " : ");
      if (r < d->nworkers) location(b, &d->workers[r]);
      ts_buf_putc(b, '\n');
    }
    ts_buf_puts(b, "  Please inspect the error log of these workers:\n  ");
    for (int i = 0; i < v->nculprits; i++) {
      if (i) ts_buf_puts(b, ", ");
      worker_name(b, d, v->culprits[i]);
    }
    ts_buf_putc(b, '\n');
    return;
  default:
    ts_buf_puts(b, "Tessera detects a hang but cannot determine the root cause. Please inspect the full digest "
                   "below.\n");
    return;
  }
  culprit_hosts(b, d);
  ts_buf_putc(b, '\n');
}

void ts_hang_digest_text(const ts_hang_digest_t *d, ts_buf_t *b) {
  const ts_hang_verdict_t *v = &d->verdict;
  headline(b, d);
  ts_buf_puts(b, "  Full error digest:\n");
  ts_buf_printf(b, "    Potential cause: %s\n", ts_hang_cause_title(v->cause));
  ts_buf_puts(b, "    Potential culprit workers: ");
  for (int i = 0; i < v->nculprits; i++) {
    if (i) ts_buf_puts(b, ", ");
    worker_name(b, d, v->culprits[i]);
  }
  if (!v->nculprits) ts_buf_puts(b, "(none can be told)");
  ts_buf_putc(b, '\n');
  if (v->npairs) {
    ts_buf_puts(b, "    Broken links: ");
    for (int k = 0; k < v->npairs; k++)
      ts_buf_printf(b, "%srank %d <-> rank %d", k ? ", " : "", v->pairs[k][0], v->pairs[k][1]);
    ts_buf_putc(b, '\n');
  }
  ts_buf_printf(b, "    First error timestamp: %s\n", d->first_error_timestamp[0] ? d->first_error_timestamp : "-");
  ts_buf_printf(b, "    First error type: %s\n", d->first_error_type[0] ? d->first_error_type : "-");
  if (d->checkpoint[0]) ts_buf_printf(b, "    Newest complete checkpoint: %s\n", d->checkpoint);
  if (v->reason[0]) ts_buf_printf(b, "    Evidence: %s\n", v->reason);
  ts_buf_puts(b, "    Worker states:\n");

  /* Groups: launch id, module, fingerprint; inside, locations, smallest
   * group first (the outliers are what to read). */
  int n = d->nworkers;
  bool *done = ts_calloc((size_t)(n ? n : 1), sizeof *done);
  bool *ldone = ts_calloc((size_t)(n ? n : 1), sizeof *ldone);
  if (!done || !ldone) {
    ts_free(done);
    ts_free(ldone);
    b->oom = true;
    return;
  }
  ts_buf_t la = {0}, lb = {0};
  for (int i = 0; i < n; i++) {
    if (done[i]) continue;
    const ts_hang_state_t *g = &d->workers[i];
    ts_buf_printf(b, "      Launch ID: %llu\n      Module: %s Fingerprint: %016llx\n", (unsigned long long)g->launch_id,
                  g->module[0] ? g->module : "?", (unsigned long long)g->fingerprint);
    ts_buf_printf(b, "        Sample worker: rank %d@%s\n      Step:instruction breakdown:\n", g->rank, g->host);
    int members = 0;
    for (int j = i; j < n; j++) {
      const ts_hang_state_t *s = &d->workers[j];
      ldone[j] = true;
      if (done[j] || s->launch_id != g->launch_id || strcmp(s->module, g->module) || s->fingerprint != g->fingerprint)
        continue;
      done[j] = true;
      ldone[j] = false;
      members++;
    }
    /* Print location groups by size, ascending. */
    for (int size = 1; size <= members; size++) {
      for (int j = i; j < n; j++) {
        if (ldone[j]) continue;
        la.len = 0;
        location(&la, &d->workers[j]);
        int count = 0;
        for (int k = i; k < n; k++) {
          if (ldone[k]) continue;
          lb.len = 0;
          location(&lb, &d->workers[k]);
          if (la.data && lb.data && !strcmp(la.data, lb.data)) count++;
        }
        if (count != size) continue;
        ts_buf_printf(b, "        %d@%s: [", count, la.data ? la.data : "");
        bool first = true;
        for (int k = j; k < n; k++) {
          if (ldone[k]) continue;
          lb.len = 0;
          location(&lb, &d->workers[k]);
          if (!la.data || !lb.data || strcmp(la.data, lb.data)) continue;
          if (!first) ts_buf_puts(b, ", ");
          first = false;
          worker_name(b, d, k);
          ldone[k] = true;
        }
        ts_buf_puts(b, "]\n");
      }
    }
  }
  ts_buf_free(&la);
  ts_buf_free(&lb);
  ts_free(done);
  ts_free(ldone);
  if (d->stragglers && d->stragglers[0]) {
    ts_buf_puts(b, "    Stragglers:\n");
    const char *p = d->stragglers;
    while (*p) {
      size_t l = strcspn(p, "\n");
      ts_buf_puts(b, "      ");
      ts_buf_append(b, p, l);
      ts_buf_putc(b, '\n');
      p += l;
      if (*p) p++;
    }
  }
}

/* ---- JSON out ------------------------------------------------------------------ */

static cJSON *coll_json(const ts_hang_coll_t *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "comm", c->comm);
  cJSON_AddNumberToObject(o, "seq", (double)c->seq);
  cJSON_AddStringToObject(o, "kind", ts_coll_kind_name((ts_coll_kind_t)c->kind));
  cJSON_AddStringToObject(o, "state", c->state >= 0 && c->state < 4 ? coll_states[c->state] : "?");
  cJSON_AddNumberToObject(o, "status", c->status);
  cJSON_AddNumberToObject(o, "peer", c->peer);
  cJSON_AddNumberToObject(o, "waiting_on", c->waiting_on);
  cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
  cJSON_AddNumberToObject(o, "age_posted_s", c->age_posted_s);
  cJSON_AddNumberToObject(o, "age_started_s", c->age_started_s);
  cJSON_AddNumberToObject(o, "age_completed_s", c->age_completed_s);
  return o;
}

static cJSON *worker_json(const ts_hang_state_t *s) {
  cJSON *o = cJSON_CreateObject();
  char fp[24];
  snprintf(fp, sizeof fp, "%016llx", (unsigned long long)s->fingerprint);
  cJSON_AddNumberToObject(o, "rank", s->rank);
  cJSON_AddStringToObject(o, "host", s->host);
  cJSON_AddNumberToObject(o, "pid", s->pid);
  cJSON_AddStringToObject(o, "status", ts_hang_worker_status_name(s->status));
  cJSON_AddStringToObject(o, "module", s->module);
  cJSON_AddStringToObject(o, "fingerprint", fp);
  cJSON_AddNumberToObject(o, "launch_id", (double)s->launch_id);
  cJSON_AddNumberToObject(o, "step", (double)s->step);
  cJSON_AddStringToObject(o, "activity", ts_hang_activity_name(s->activity));
  cJSON_AddNumberToObject(o, "instr", s->instr);
  cJSON_AddStringToObject(o, "instr_name", s->instr_name);
  cJSON_AddNumberToObject(o, "progress", (double)s->progress);
  cJSON_AddNumberToObject(o, "progress_age_s", s->progress_age_s);
  cJSON_AddNumberToObject(o, "error", s->error);
  cJSON_AddStringToObject(o, "error_name", s->error ? ts_status_string((ts_status_t)s->error) : "");
  cJSON_AddNumberToObject(o, "waiting_on", s->waiting_on);
  cJSON_AddNumberToObject(o, "last_step_ns", (double)s->last_step_ns);
  cJSON_AddNumberToObject(o, "last_compute_ns", (double)s->last_compute_ns);
  cJSON_AddNumberToObject(o, "last_collective_ns", (double)s->last_collective_ns);
  cJSON_AddNumberToObject(o, "event_time", s->event_time);
  cJSON_AddStringToObject(o, "note", s->note);
  cJSON *cs = cJSON_AddArrayToObject(o, "collectives");
  for (int i = 0; i < s->ncolls && i < TS_HANG_COLLS; i++) cJSON_AddItemToArray(cs, coll_json(&s->colls[i]));
  /* The flight recorder: the newest records, oldest first (ages are seconds
   * before the state was taken; -1 not reached). */
  cJSON *fl = cJSON_AddArrayToObject(o, "flight");
  for (int i = 0; i < s->nflight && i < TS_HANG_FLIGHT; i++) cJSON_AddItemToArray(fl, coll_json(&s->flight[i]));
  return o;
}

ts_status_t ts_hang_digest_json(const ts_hang_digest_t *d, char **out) {
  *out = NULL;
  const ts_hang_verdict_t *v = &d->verdict;
  cJSON *root = cJSON_CreateObject();
  if (!root) return TS_ERR_NOMEM;
  cJSON_AddNumberToObject(root, "version", TS_HANG_DIGEST_VERSION);
  cJSON_AddStringToObject(root, "cause", ts_hang_cause_key(v->cause));
  cJSON_AddStringToObject(root, "cause_title", ts_hang_cause_title(v->cause));
  cJSON *cul = cJSON_AddArrayToObject(root, "culprits");
  for (int i = 0; i < v->nculprits; i++) {
    cJSON *c = cJSON_CreateObject();
    int r = v->culprits[i];
    cJSON_AddNumberToObject(c, "rank", r);
    cJSON_AddStringToObject(c, "host", r < d->nworkers ? d->workers[r].host : "");
    cJSON_AddItemToArray(cul, c);
  }
  ts_buf_t hosts = {0};
  culprit_hosts(&hosts, d);
  cJSON *hs = cJSON_AddArrayToObject(root, "hosts");
  if (v->nculprits) {
    char *p = hosts.data;
    while (p && *p) {
      char *e = strstr(p, ", ");
      if (e) *e = '\0';
      cJSON_AddItemToArray(hs, cJSON_CreateString(p));
      p = e ? e + 2 : NULL;
    }
  }
  ts_buf_free(&hosts);
  cJSON *pairs = cJSON_AddArrayToObject(root, "pairs");
  for (int k = 0; k < v->npairs; k++) {
    int pr[2] = {v->pairs[k][0], v->pairs[k][1]};
    cJSON_AddItemToArray(pairs, cJSON_CreateIntArray(pr, 2));
  }
  cJSON_AddStringToObject(root, "recurring_host", v->host);
  cJSON_AddStringToObject(root, "reason", v->reason);
  cJSON_AddNumberToObject(root, "first_error_rank", v->first_error_rank);
  cJSON_AddStringToObject(root, "first_error_timestamp", d->first_error_timestamp);
  cJSON_AddStringToObject(root, "first_error_type", d->first_error_type);
  cJSON_AddStringToObject(root, "detected_at", d->detected_at);
  if (d->checkpoint[0]) cJSON_AddStringToObject(root, "checkpoint", d->checkpoint);
  cJSON_AddNumberToObject(root, "hang_timeout_s", d->hang_timeout_s);
  cJSON_AddNumberToObject(root, "coordinator_pid", d->coordinator_pid);
  cJSON *st = cJSON_AddArrayToObject(root, "stragglers");
  for (const char *p = d->stragglers; p && *p;) {
    size_t l = strcspn(p, "\n");
    char line[TS_HANG_TEXT_MAX];
    ts_hang_strlcpy(line, p, l + 1 < sizeof line ? l + 1 : sizeof line);
    cJSON_AddItemToArray(st, cJSON_CreateString(line));
    p += l;
    if (*p) p++;
  }
  cJSON *ws = cJSON_AddArrayToObject(root, "workers");
  for (int i = 0; i < d->nworkers; i++) cJSON_AddItemToArray(ws, worker_json(&d->workers[i]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return TS_ERR_NOMEM;
  *out = ts_strdup(text);
  cJSON_free(text);
  return *out ? TS_OK : TS_ERR_NOMEM;
}

/* ---- JSON in --------------------------------------------------------------------- */

typedef struct {
  const char *path;
  ts_diag_t *diag;
  bool bad;
} jctx_t;

static const cJSON *need(jctx_t *j, const cJSON *o, const char *key, bool number) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || (number ? !cJSON_IsNumber(v) : !cJSON_IsString(v))) {
    if (!j->bad) ts_diag_path_error(j->diag, j->path, TS_ERR_PARSE, "digest: '%s' missing or not a %s", key,
                                    number ? "number" : "string");
    j->bad = true;
    return NULL;
  }
  return v;
}
static double num(jctx_t *j, const cJSON *o, const char *key) {
  const cJSON *v = need(j, o, key, true);
  return v && isfinite(v->valuedouble) ? v->valuedouble : 0;
}
static int32_t inum(jctx_t *j, const cJSON *o, const char *key) {
  double d = num(j, o, key);
  return d >= -2147483648.0 && d <= 2147483647.0 ? (int32_t)d : 0;
}
static void str(jctx_t *j, const cJSON *o, const char *key, char *dst, size_t n) {
  const cJSON *v = need(j, o, key, false);
  ts_hang_strlcpy(dst, v ? v->valuestring : "", n);
}
/* Optional string (absent: ""). */
static void ostr(const cJSON *o, const char *key, char *dst, size_t n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  ts_hang_strlcpy(dst, cJSON_IsString(v) ? v->valuestring : "", n);
}

static int name_index(const char *s, const char *(*name)(int), int count) {
  for (int i = 0; i < count; i++)
    if (!strcmp(s, name(i))) return i;
  return -1;
}

static void coll_parse(jctx_t *j, const cJSON *c, ts_hang_coll_t *r);

static void parse_worker(jctx_t *j, const cJSON *o, ts_hang_state_t *s) {
  char tmp[64];
  memset(s, 0, sizeof *s);
  s->rank = inum(j, o, "rank");
  str(j, o, "host", s->host, sizeof s->host);
  s->pid = inum(j, o, "pid");
  str(j, o, "status", tmp, sizeof tmp);
  s->status = name_index(tmp, ts_hang_worker_status_name, TS_HANG_WORKER_CANCELLED + 1);
  str(j, o, "module", s->module, sizeof s->module);
  str(j, o, "fingerprint", tmp, sizeof tmp);
  s->fingerprint = strtoull(tmp, NULL, 16);
  s->launch_id = (uint64_t)num(j, o, "launch_id");
  s->step = (int64_t)num(j, o, "step");
  str(j, o, "activity", tmp, sizeof tmp);
  s->activity = name_index(tmp, ts_hang_activity_name, TS_HANG_FAILED + 1);
  s->instr = inum(j, o, "instr");
  str(j, o, "instr_name", s->instr_name, sizeof s->instr_name);
  s->progress = (uint64_t)num(j, o, "progress");
  s->progress_age_s = num(j, o, "progress_age_s");
  s->error = inum(j, o, "error");
  s->waiting_on = inum(j, o, "waiting_on");
  s->last_step_ns = (uint64_t)num(j, o, "last_step_ns");
  s->last_compute_ns = (uint64_t)num(j, o, "last_compute_ns");
  s->last_collective_ns = (uint64_t)num(j, o, "last_collective_ns");
  s->event_time = num(j, o, "event_time");
  ostr(o, "note", s->note, sizeof s->note);
  if (!j->bad && (s->status < 0 || s->activity < 0)) {
    ts_diag_path_error(j->diag, j->path, TS_ERR_PARSE, "digest: worker %d has an unknown status or activity",
                       s->rank);
    j->bad = true;
  }
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(o, "collectives"), *c;
  cJSON_ArrayForEach(c, cs) {
    if (s->ncolls == TS_HANG_COLLS || !cJSON_IsObject(c)) break;
    coll_parse(j, c, &s->colls[s->ncolls++]);
  }
  const cJSON *fl = cJSON_GetObjectItemCaseSensitive(o, "flight"); /* absent in older digests */
  cJSON_ArrayForEach(c, fl) {
    if (s->nflight == TS_HANG_FLIGHT || !cJSON_IsObject(c)) break;
    coll_parse(j, c, &s->flight[s->nflight++]);
  }
}

static void coll_parse(jctx_t *j, const cJSON *c, ts_hang_coll_t *r) {
  char tmp[64];
  {
    r->comm = (uint32_t)num(j, c, "comm");
    r->seq = (uint64_t)num(j, c, "seq");
    str(j, c, "kind", tmp, sizeof tmp);
    ts_coll_kind_t k = TS_COLL_ALL_REDUCE;
    ts_coll_kind_from_name(tmp, &k);
    r->kind = (int32_t)k;
    str(j, c, "state", tmp, sizeof tmp);
    r->state = 0;
    for (int q = 0; q < 4; q++)
      if (!strcmp(tmp, coll_states[q])) r->state = q;
    r->status = inum(j, c, "status");
    r->peer = inum(j, c, "peer");
    r->waiting_on = inum(j, c, "waiting_on");
    r->bytes = (uint64_t)num(j, c, "bytes");
    r->age_posted_s = num(j, c, "age_posted_s");
    r->age_started_s = num(j, c, "age_started_s");
    r->age_completed_s = num(j, c, "age_completed_s");
  }
}

ts_status_t ts_hang_digest_parse_json(const char *text, size_t len, const char *path, ts_hang_digest_t *d,
                                      ts_diag_t *diag) {
  memset(d, 0, sizeof *d);
  d->verdict.first_error_rank = -1;
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ts_diag_path_error(diag, path, TS_ERR_PARSE, "not a JSON hang digest (cannot parse it as a JSON object)");
  }
  jctx_t j = {path, diag, false};
  ts_status_t st = TS_ERR_PARSE;
  char tmp[64];
  str(&j, root, "cause", tmp, sizeof tmp);
  if (!j.bad && !ts_hang_cause_from_key(tmp, &d->verdict.cause)) {
    ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: unknown cause '%s'", tmp);
    goto out;
  }
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(root, "workers");
  const cJSON *cul = cJSON_GetObjectItemCaseSensitive(root, "culprits");
  if (!j.bad && (!cJSON_IsArray(ws) || !cJSON_IsArray(cul))) {
    ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: 'workers' and 'culprits' must be arrays");
    goto out;
  }
  if (j.bad) goto out;
  int n = cJSON_GetArraySize(ws);
  d->nworkers = n;
  d->workers = ts_calloc((size_t)(n ? n : 1), sizeof *d->workers);
  d->verdict.culprits = ts_calloc((size_t)(n ? n : 1), sizeof *d->verdict.culprits);
  d->verdict.pairs = ts_calloc((size_t)(n ? n : 1), sizeof *d->verdict.pairs);
  if (!d->workers || !d->verdict.culprits || !d->verdict.pairs) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  int i = 0;
  const cJSON *w;
  cJSON_ArrayForEach(w, ws) {
    if (!cJSON_IsObject(w)) {
      j.bad = true;
      ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: workers[%d] is not an object", i);
      goto out;
    }
    parse_worker(&j, w, &d->workers[i]);
    if (j.bad) goto out;
    if (d->workers[i].rank != i) {
      ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: workers[%d] has rank %d", i, d->workers[i].rank);
      goto out;
    }
    i++;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cul) {
    int r = cJSON_IsObject(c) ? inum(&j, c, "rank") : -1;
    if (j.bad || r < 0 || r >= n || d->verdict.nculprits >= n) {
      if (!j.bad) ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: a culprit names no worker of the digest");
      goto out;
    }
    d->verdict.culprits[d->verdict.nculprits++] = r;
  }
  const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "pairs"), *p;
  cJSON_ArrayForEach(p, pairs) {
    const cJSON *a = cJSON_GetArrayItem(p, 0), *b = cJSON_GetArrayItem(p, 1);
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valueint < 0 || a->valueint >= n || b->valueint < 0 ||
        b->valueint >= n || d->verdict.npairs >= n) {
      ts_diag_path_error(diag, path, TS_ERR_PARSE, "digest: a pair names no worker of the digest");
      goto out;
    }
    d->verdict.pairs[d->verdict.npairs][0] = a->valueint;
    d->verdict.pairs[d->verdict.npairs][1] = b->valueint;
    d->verdict.npairs++;
  }
  ostr(root, "recurring_host", d->verdict.host, sizeof d->verdict.host);
  ostr(root, "reason", d->verdict.reason, sizeof d->verdict.reason);
  const cJSON *fr = cJSON_GetObjectItemCaseSensitive(root, "first_error_rank");
  d->verdict.first_error_rank = cJSON_IsNumber(fr) && fr->valueint >= 0 && fr->valueint < n ? fr->valueint : -1;
  str(&j, root, "first_error_timestamp", d->first_error_timestamp, sizeof d->first_error_timestamp);
  str(&j, root, "first_error_type", d->first_error_type, sizeof d->first_error_type);
  ostr(root, "detected_at", d->detected_at, sizeof d->detected_at);
  ostr(root, "checkpoint", d->checkpoint, sizeof d->checkpoint);
  const cJSON *ht = cJSON_GetObjectItemCaseSensitive(root, "hang_timeout_s");
  d->hang_timeout_s = cJSON_IsNumber(ht) ? ht->valuedouble : 0;
  const cJSON *cp = cJSON_GetObjectItemCaseSensitive(root, "coordinator_pid");
  d->coordinator_pid = cJSON_IsNumber(cp) ? cp->valueint : 0;
  if (j.bad) goto out;
  const cJSON *sts = cJSON_GetObjectItemCaseSensitive(root, "stragglers"), *s;
  ts_buf_t sb = {0};
  cJSON_ArrayForEach(s, sts) if (cJSON_IsString(s)) ts_buf_printf(&sb, "%s\n", s->valuestring);
  d->stragglers = sb.data;
  st = TS_OK;
out:
  cJSON_Delete(root);
  if (st != TS_OK) ts_hang_digest_free(d);
  return st;
}

/* ---- the flight recorder across ranks (tessera diagnose --collectives) ----- */

static const char *coll_state_name(int s) { return s >= 0 && s < 4 ? coll_states[s] : "?"; }

/* One rank's view of one group: completed through `done`, newest posted
 * `last`, oldest unfinished `open` (0 none). */
typedef struct {
  bool any;
  uint64_t done, last, open;
  int open_state, open_kind, open_waiting;
} rank_view_t;

static void view_of(const ts_hang_state_t *s, uint32_t g, rank_view_t *v) {
  memset(v, 0, sizeof *v);
  v->open_waiting = -1;
  for (int i = 0; i < s->nflight; i++) {
    const ts_hang_coll_t *c = &s->flight[i];
    if (c->comm != g) continue;
    v->any = true;
    if (c->seq > v->last) v->last = c->seq;
    if (c->state == TS_COLL_COMPLETED && c->seq > v->done) v->done = c->seq;
    if ((c->state == TS_COLL_POSTED || c->state == TS_COLL_STARTED || c->state == TS_COLL_FAILED) &&
        (!v->open || c->seq < v->open)) {
      v->open = c->seq;
      v->open_state = c->state;
      v->open_kind = c->kind;
      v->open_waiting = c->waiting_on;
    }
  }
}

static const ts_hang_coll_t *find_seq(const ts_hang_state_t *s, uint32_t g, uint64_t seq) {
  for (int i = 0; i < s->nflight; i++)
    if (s->flight[i].comm == g && s->flight[i].seq == seq) return &s->flight[i];
  return NULL;
}

static void rank_list(ts_buf_t *out, const char *label, const int *ranks, int n) {
  if (!n) return;
  ts_buf_printf(out, "      %s:", label);
  for (int i = 0; i < n; i++) ts_buf_printf(out, " %d", ranks[i]);
  ts_buf_puts(out, "\n");
}

void ts_hang_digest_collectives(const ts_hang_digest_t *d, ts_buf_t *out) {
  int n = d->nworkers;
  uint32_t groups[64];
  int ngroups = 0;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < d->workers[r].nflight; i++) {
      uint32_t g = d->workers[r].flight[i].comm;
      int k = 0;
      while (k < ngroups && groups[k] != g) k++;
      if (k == ngroups && ngroups < 64) groups[ngroups++] = g;
    }
  ts_buf_puts(out, "Collectives (flight recorder, newest records of each rank):\n");
  if (!ngroups) {
    ts_buf_puts(out, "  no flight records in this digest\n");
    return;
  }
  rank_view_t *v = ts_calloc((size_t)n, sizeof *v);
  int *a = ts_calloc((size_t)n * 3, sizeof *a);
  if (!v || !a) {
    ts_free(v);
    ts_free(a);
    out->oom = true;
    return;
  }
  for (int k = 0; k < ngroups; k++) {
    uint32_t g = groups[k];
    ts_buf_printf(out, "  group %u:\n", g);
    uint64_t lo = UINT64_MAX, hi = 0, first = UINT64_MAX;
    for (int r = 0; r < n; r++)
      for (int i = 0; i < d->workers[r].nflight; i++)
        if (d->workers[r].flight[i].comm == g && d->workers[r].flight[i].seq < first) first = d->workers[r].flight[i].seq;
    for (int r = 0; r < n; r++) {
      view_of(&d->workers[r], g, &v[r]);
      if (!v[r].any) {
        ts_buf_printf(out, "    rank %d: no records\n", r);
        continue;
      }
      ts_buf_printf(out, "    rank %d: completed through seq %llu, newest seq %llu", r, (unsigned long long)v[r].done,
                    (unsigned long long)v[r].last);
      if (v[r].open) {
        ts_buf_printf(out, ", seq %llu %s %s", (unsigned long long)v[r].open,
                      ts_coll_kind_name((ts_coll_kind_t)v[r].open_kind), coll_state_name(v[r].open_state));
        if (v[r].open_waiting >= 0) ts_buf_printf(out, " waiting on rank %d", v[r].open_waiting);
      }
      ts_buf_puts(out, "\n");
      if (v[r].done < lo) lo = v[r].done;
      if (v[r].last > hi) hi = v[r].last;
    }
    /* Code-path divergence: one seq, different kinds (or sizes). */
    for (uint64_t s = first; s <= hi && s - first < 4096; s++) {
      const ts_hang_coll_t *ref = NULL;
      int refrank = -1;
      for (int r = 0; r < n; r++) {
        const ts_hang_coll_t *c = find_seq(&d->workers[r], g, s);
        if (!c) continue;
        if (!ref) {
          ref = c;
          refrank = r;
        } else if (c->kind != ref->kind || c->bytes != ref->bytes) {
          ts_buf_printf(out, "    MISMATCH at seq %llu: rank %d %s %llu bytes, rank %d %s %llu bytes\n",
                        (unsigned long long)s, refrank, ts_coll_kind_name((ts_coll_kind_t)ref->kind),
                        (unsigned long long)ref->bytes, r, ts_coll_kind_name((ts_coll_kind_t)c->kind),
                        (unsigned long long)c->bytes);
          break;
        }
      }
    }
    if (lo == UINT64_MAX) continue;
    uint64_t s = lo + 1;
    int ndone = 0, nflight = 0, nmissing = 0;
    for (int r = 0; r < n; r++) {
      if (!v[r].any) {
        a[2 * n + nmissing++] = r;
        continue;
      }
      const ts_hang_coll_t *c = find_seq(&d->workers[r], g, s);
      if (v[r].done >= s)
        a[ndone++] = r;
      else if (c)
        a[n + nflight++] = r;
      else
        a[2 * n + nmissing++] = r;
    }
    if (!nflight && !nmissing) {
      ts_buf_puts(out, "    every rank completed the same collectives: no divergence\n");
      continue;
    }
    const ts_hang_coll_t *c = NULL;
    for (int r = 0; r < n && !c; r++) c = find_seq(&d->workers[r], g, s);
    ts_buf_printf(out, "    ranks diverge at seq %llu (%s):\n", (unsigned long long)s,
                  c ? ts_coll_kind_name((ts_coll_kind_t)c->kind) : "?");
    rank_list(out, "completed it", a, ndone);
    rank_list(out, "posted it, not completed", a + n, nflight);
    rank_list(out, "never posted it (the laggards)", a + 2 * n, nmissing);
  }
  ts_free(v);
  ts_free(a);
}
