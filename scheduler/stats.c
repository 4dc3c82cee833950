/* Statistics of a schedule, as XLA's LatencyHidingStatistics computes them:
 * the final order replayed top-down, each op adding its cost to the clock,
 * each async done adding the part of its collective's time that the work
 * since its start did not cover (the wasted, or exposed, time). Also the
 * text report and the Chrome trace of the entry computation. */
#include "scheduler_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

static ts_status_t push_pair(sched_log_t *log, const ts_sched_pair_t *p) {
  if (log->npairs == log->pairs_cap) {
    int cap = log->pairs_cap ? log->pairs_cap * 2 : 16;
    ts_sched_pair_t *np = ts_realloc(log->pairs, sizeof *np * (size_t)cap);
    if (!np) return TS_ERR_NOMEM;
    log->pairs = np;
    log->pairs_cap = cap;
  }
  log->pairs[log->npairs++] = *p;
  return TS_OK;
}

static ts_status_t push_event(sched_log_t *log, const ts_sched_event_t *e) {
  if (log->nevents == log->events_cap) {
    int cap = log->events_cap ? log->events_cap * 2 : 64;
    ts_sched_event_t *ne = ts_realloc(log->events, sizeof *ne * (size_t)cap);
    if (!ne) return TS_ERR_NOMEM;
    log->events = ne;
    log->events_cap = cap;
  }
  log->events[log->nevents++] = *e;
  return TS_OK;
}

static const ts_hlo_comp_t *comp_attr(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && a->kind == TS_ATTR_COMP && a->v.comps.n == 1 ? a->v.comps.comps[0] : NULL;
}

/* Replays c's order from time t0; with a log, records every async pair
 * (nested ones too, with their executions per step) and, with `events`,
 * the timeline of c itself. */
ts_status_t ts_sched_replay(sched_ctx_t *x, const ts_hlo_comp_t *c, double *time, sched_log_t *log,
                            double executions, bool events, double t0, int depth) {
  double t = t0;
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    const sched_node_t *n = &x->node[i->id];
    if (n->kind != NO_KIND && ts_sched_is_async_start(i)) {
      x->tstart[i->id] = t;
      if (log && events) {
        ts_sched_event_t e = {i->name, ts_opcode_name(i->op), 1 + n->kind, t, n->latency, depth};
        TS_CHECK(push_event(log, &e));
      }
      continue;
    }
    if (n->kind != NO_KIND && ts_sched_is_async_done(i)) {
      const ts_hlo_instr_t *s = n->partner;
      const sched_node_t *sn = &x->node[s->id];
      double covered = t - x->tstart[s->id], wasted = sn->latency > covered ? sn->latency - covered : 0;
      t += wasted;
      if (log) {
        ts_sched_pair_t p = {s->name,    i->name,    c->name, (ts_coll_kind_t)n->kind, sn->latency, wasted,
                             sn->latency - wasted, executions, sn->source};
        TS_CHECK(push_pair(log, &p));
      }
      continue;
    }
    if (log) { /* nested pairs, counted per execution of their computation */
      if (i->op == TS_OP_WHILE) {
        const ts_hlo_comp_t *body = comp_attr(i, "body"), *cond = comp_attr(i, "condition");
        double sub;
        if (body) TS_CHECK(ts_sched_replay(x, body, &sub, log, executions * n->trips, false, 0, depth + 1));
        if (cond) TS_CHECK(ts_sched_replay(x, cond, &sub, log, executions * (n->trips + 1), false, 0, depth + 1));
      } else if (i->op == TS_OP_CALL || i->op == TS_OP_CONDITIONAL) {
        double sub;
        for (int q = 0; q < i->ncalled; q++)
          TS_CHECK(ts_sched_replay(x, i->called[q], &sub, log, executions, false, 0, depth + 1));
      }
    }
    if (log && i->op != TS_OP_WHILE && i->op != TS_OP_CALL && i->op != TS_OP_CONDITIONAL)
      log->compute += n->cost * executions;
    if (log && events && n->cost > 0) {
      ts_sched_event_t e = {i->name, ts_opcode_name(i->op), 0, t, n->cost, depth};
      TS_CHECK(push_event(log, &e));
    }
    t += n->cost;
  }
  *time = t - t0;
  return TS_OK;
}

void ts_sched_result_destroy(ts_sched_result_t *r) {
  if (!r) return;
  ts_free(r->pairs);
  ts_free(r->events);
  ts_free(r);
}

static const char *fmt_bytes(char *buf, size_t n, uint64_t b) {
  if (b >= (UINT64_C(1) << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (double)(UINT64_C(1) << 30));
  else if (b >= (UINT64_C(1) << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (double)(UINT64_C(1) << 20));
  else if (b >= 1024) snprintf(buf, n, "%.2f KiB", (double)b / 1024.0);
  else snprintf(buf, n, "%llu B", (unsigned long long)b);
  return buf;
}

void ts_sched_result_print(const ts_sched_result_t *r, ts_buf_t *out) {
  char b1[32], b2[32];
  ts_buf_printf(out, "scheduled: %d computations, %d instructions, %d collectives made async, in %.1f ms\n",
                r->computations, r->instructions, r->converted, r->schedule_wall_s * 1e3);
  ts_buf_printf(out, "predicted step time: %.3f us\n", r->step_time_s * 1e6);
  ts_buf_printf(out, "compute: %.3f us, collectives: %.3f us, exposed: %.3f us, overlap: %.1f%% of collective time hidden\n",
                r->compute_s * 1e6, r->collective_s * 1e6, r->wasted_s * 1e6, r->overlap * 100);
  ts_buf_printf(out, "Total wasted time (us): %.3f\n", r->wasted_s * 1e6);
  for (int k = 0; k < TS_SCHED_KIND_COUNT; k++)
    ts_buf_printf(out, "Wasted time for %s (us): %.3f\n", ts_coll_kind_name((ts_coll_kind_t)k),
                  r->wasted_by_kind_s[k] * 1e6);
  ts_buf_printf(out, "Total time (us): %.3f\n", r->step_time_s * 1e6);
  ts_buf_printf(out, "Memory pressure peak (bytes): %llu (%s", (unsigned long long)r->peak_memory_bytes,
                fmt_bytes(b1, sizeof b1, r->peak_memory_bytes));
  if (r->memory_limit)
    ts_buf_printf(out, ", limit %s, %d reschedules", fmt_bytes(b2, sizeof b2, r->memory_limit), r->reruns_used);
  ts_buf_puts(out, ")\n");
  ts_buf_printf(out, "program order (collectives synchronous): step %.3f us, memory peak %llu (%s)",
                r->program_order_step_s * 1e6, (unsigned long long)r->program_order_peak_bytes,
                fmt_bytes(b2, sizeof b2, r->program_order_peak_bytes));
  if (r->kept_program_order) ts_buf_printf(out, "; %d computations kept in program order to stay within its peak",
                                           r->kept_program_order);
  ts_buf_puts(out, "\n");
  ts_buf_printf(out, "async pairs: %d\n", r->npairs);
  for (int k = 0; k < r->npairs; k++) {
    const ts_sched_pair_t *p = &r->pairs[k];
    ts_buf_printf(out, "  %s -> %s in %%%s: %s, latency %.3f us (%s), hidden %.3f us, wasted %.3f us, x%.0f per step\n",
                  p->start, p->done, p->computation, ts_coll_kind_name(p->kind), p->latency_s * 1e6,
                  p->source ? p->source : "?", p->hidden_s * 1e6, p->wasted_s * 1e6, p->executions);
  }
}

ts_status_t ts_sched_trace_json(const ts_sched_result_t *r, ts_buf_t *out) {
  cJSON *root = cJSON_CreateObject(), *ev = cJSON_AddArrayToObject(root, "traceEvents");
  if (!root || !ev) goto nomem;
  cJSON_AddStringToObject(root, "displayTimeUnit", "ns");
  /* Lane names. */
  for (int lane = 0; lane <= TS_SCHED_KIND_COUNT; lane++) {
    cJSON *m = cJSON_CreateObject(), *args;
    if (!m) goto nomem;
    cJSON_AddItemToArray(ev, m);
    cJSON_AddStringToObject(m, "name", "thread_name");
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", 0);
    cJSON_AddNumberToObject(m, "tid", lane);
    args = cJSON_AddObjectToObject(m, "args");
    if (!args) goto nomem;
    cJSON_AddStringToObject(args, "name", lane == 0 ? "compute" : ts_coll_kind_name((ts_coll_kind_t)(lane - 1)));
  }
  for (int k = 0; k < r->nevents; k++) {
    const ts_sched_event_t *e = &r->events[k];
    cJSON *j = cJSON_CreateObject(), *args;
    if (!j) goto nomem;
    cJSON_AddItemToArray(ev, j);
    cJSON_AddStringToObject(j, "name", e->name);
    cJSON_AddStringToObject(j, "cat", e->op);
    cJSON_AddStringToObject(j, "ph", "X");
    cJSON_AddNumberToObject(j, "ts", e->start_s * 1e6);
    cJSON_AddNumberToObject(j, "dur", e->dur_s * 1e6);
    cJSON_AddNumberToObject(j, "pid", 0);
    cJSON_AddNumberToObject(j, "tid", e->lane);
    args = cJSON_AddObjectToObject(j, "args");
    if (!args) goto nomem;
    cJSON_AddStringToObject(args, "op", e->op);
  }
  cJSON *other = cJSON_AddObjectToObject(root, "otherData");
  if (!other) goto nomem;
  cJSON_AddNumberToObject(other, "predicted_step_time_us", r->step_time_s * 1e6);
  cJSON_AddNumberToObject(other, "wasted_us", r->wasted_s * 1e6);
  cJSON_AddNumberToObject(other, "overlap", r->overlap);
  cJSON_AddNumberToObject(other, "memory_pressure_peak_bytes", (double)r->peak_memory_bytes);
  char *text = cJSON_PrintUnformatted(root);
  if (!text) goto nomem;
  ts_buf_puts(out, text);
  ts_buf_putc(out, '\n');
  cJSON_free(text);
  cJSON_Delete(root);
  return TS_OK;
nomem:
  cJSON_Delete(root);
  return TS_ERR_NOMEM;
}
