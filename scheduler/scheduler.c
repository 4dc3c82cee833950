/* The scheduling pass: async conversion, then every computation scheduled
 * callees first (a while's cost is its body's scheduled time), the header's
 * is_scheduled=true, and the statistics of the entry computation. */
#include <errno.h>
#include <stdlib.h>
#include "scheduler_internal.h"

#include <string.h>
#include <time.h>

void ts_sched_opts_default(ts_sched_opts_t *o) {
  memset(o, 0, sizeof *o);
  for (int k = 0; k < TS_SCHED_KIND_COUNT; k++) o->overlap_limit[k] = 1;
  o->reruns = 5;
  o->convert_async = true;
  o->keep_program_peak = true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int comp_index(const ts_hlo_module_t *m, const ts_hlo_comp_t *c) {
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k] == c) return k;
  return -1;
}

/* Post-order over the call graph: callees are scheduled before callers. The
 * call graph is acyclic (the verifier checks it), and shallow. */
static ts_status_t visit(sched_ctx_t *x, ts_hlo_comp_t *c, uint8_t *state) {
  int k = comp_index(x->m, c);
  if (k < 0 || state[k]) return TS_OK;
  state[k] = 1;
  for (int q = 0; q < c->ninstrs; q++) {
    const ts_hlo_instr_t *i = c->instrs[q];
    for (int e = 0; e < i->ncalled; e++) TS_CHECK(visit(x, i->called[e], state));
  }
  TS_CHECK(ts_sched_comp(x, c, k));
  state[k] = 2;
  return TS_OK;
}

static ts_status_t mark_scheduled(ts_hlo_module_t *m) {
  for (int k = 0; k < m->nattrs; k++)
    if (strcmp(m->attrs[k].name, "is_scheduled") == 0) {
      m->attrs[k].kind = TS_ATTR_BOOL;
      m->attrs[k].v.b = true;
      return TS_OK;
    }
  ts_hlo_attr_t a = {.name = "is_scheduled", .kind = TS_ATTR_BOOL};
  a.v.b = true;
  return ts_hlo_module_add_attr(m, &a);
}

ts_status_t ts_schedule(ts_hlo_module_t *m, const ts_sched_opts_t *opts, ts_sched_result_t **out,
                        ts_diag_t *diag) {
  ts_sched_opts_t defaults;
  if (!opts) {
    ts_sched_opts_default(&defaults);
    opts = &defaults;
  }
  if (out) *out = NULL;
  double t0 = now_s();
  int converted = 0;
  if (opts->convert_async) TS_CHECK(ts_sched_convert_async(m, &converted, diag));

  sched_ctx_t x = {.m = m, .o = opts, .cm = opts->cost, .diag = diag};
  if (opts->cost) {
    x.roof = *ts_costmodel_roofline(opts->cost);
    x.slice = ts_costmodel_slice_size(opts->cost);
  } else {
    TS_CHECK(ts_roofline_preset("host", &x.roof));
  }
  x.ndevices = m->replica_count * m->num_partitions;
  x.node = ts_calloc((size_t)m->next_id + 1, sizeof *x.node);
  x.comp = ts_calloc((size_t)m->ncomps + 1, sizeof *x.comp);
  x.tstart = ts_calloc((size_t)m->next_id + 1, sizeof *x.tstart);
  x.is_body = ts_calloc((size_t)m->ncomps + 1, sizeof *x.is_body);
  uint8_t *state = ts_calloc((size_t)m->ncomps + 1, 1);
  sched_log_t log = {0};
  ts_sched_result_t *r = NULL;
  ts_status_t st = TS_OK;
  if (!x.node || !x.comp || !x.tstart || !x.is_body || !state) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int k = 0; k < m->ncomps; k++)
    for (int q = 0; q < m->comps[k]->ninstrs; q++) {
      const ts_hlo_instr_t *w = m->comps[k]->instrs[q];
      const ts_hlo_attr_t *b = w->op == TS_OP_WHILE ? ts_hlo_instr_attr(w, "body") : NULL;
      int kb = b && b->kind == TS_ATTR_COMP && b->v.comps.n == 1 ? comp_index(m, b->v.comps.comps[0]) : -1;
      if (kb >= 0) x.is_body[kb] = true;
    }
  for (int k = 0; k < m->ncomps; k++) TS_CHECK_GOTO(visit(&x, m->comps[k], state), st, done);
  TS_CHECK_GOTO(mark_scheduled(m), st, done);
  if (!out || !m->entry) goto done;

  r = ts_calloc(1, sizeof *r);
  if (!r) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  TS_CHECK_GOTO(ts_sched_replay(&x, m->entry, &r->step_time_s, &log, 1, true, 0, 0), st, done);
  r->compute_s = log.compute;
  for (int k = 0; k < log.npairs; k++) {
    const ts_sched_pair_t *p = &log.pairs[k];
    r->collective_s += p->latency_s * p->executions;
    r->wasted_s += p->wasted_s * p->executions;
    r->wasted_by_kind_s[p->kind] += p->wasted_s * p->executions;
  }
  r->overlap = r->collective_s > 0 ? 1 - r->wasted_s / r->collective_s : 1;
  uint64_t params = 0;
  for (int k = 0; k < m->entry->nparams; k++) params += ts_shape_bytes(m->entry->params[k]->shape);
  int ke = comp_index(m, m->entry);
  r->peak_memory_bytes = params + (ke >= 0 ? x.comp[ke].peak : 0);
  r->program_order_peak_bytes = params + (ke >= 0 ? x.comp[ke].base_peak : 0);
  r->program_order_step_s = ke >= 0 ? x.comp[ke].serial : 0;
  r->memory_limit = opts->memory_limit;
  for (int k = 0; k < m->ncomps; k++) {
    if (x.comp[k].reruns > r->reruns_used) r->reruns_used = x.comp[k].reruns;
    r->kept_program_order += x.comp[k].fell_back;
    r->instructions += m->comps[k]->ninstrs;
  }
  r->converted = converted;
  r->computations = m->ncomps;
  r->pairs = log.pairs;
  r->npairs = log.npairs;
  r->events = log.events;
  r->nevents = log.nevents;
  log.pairs = NULL;
  log.events = NULL;
  r->schedule_wall_s = now_s() - t0;
  *out = r;
  r = NULL;
done:
  ts_sched_result_destroy(r);
  ts_free(log.pairs);
  ts_free(log.events);
  ts_free(x.node);
  ts_free(x.comp);
  ts_free(x.tstart);
  ts_free(x.is_body);
  ts_free(state);
  return st;
}

const char ts_sched_overlap_limit_syntax[] =
    "N or KIND=N,... (KIND: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, "
    "collective-broadcast; N from 1 to 1024)";

bool ts_sched_parse_overlap_limit(const char *s, ts_sched_opts_t *o) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!errno && end != s && !*end && v > 0 && v <= 1024) {
    for (int k = 0; k < TS_SCHED_KIND_COUNT; k++) o->overlap_limit[k] = (int)v;
    return true;
  }
  int limit[TS_SCHED_KIND_COUNT];
  memcpy(limit, o->overlap_limit, sizeof limit);
  const char *p = s;
  if (!*p) return false;
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *eq = memchr(p, '=', n);
    int kind = -1;
    for (int k = 0; eq && k < TS_SCHED_KIND_COUNT; k++) {
      const char *name = ts_coll_kind_name((ts_coll_kind_t)k);
      if (strlen(name) == (size_t)(eq - p) && strncmp(name, p, (size_t)(eq - p)) == 0) kind = k;
    }
    errno = 0;
    v = eq ? strtol(eq + 1, &end, 10) : 0;
    if (kind < 0 || errno || end == eq + 1 || end != p + n || v <= 0 || v > 1024) return false;
    limit[kind] = (int)v;
    p += n + (p[n] == ',');
  }
  memcpy(o->overlap_limit, limit, sizeof limit);
  return true;
}
