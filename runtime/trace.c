/* The merged timeline (tessera run --trace) of every rank as a Chrome trace
 * (the JSON Trace Event Format that chrome://tracing and Perfetto read):
 * one process per rank, a compute and a collective track in each; a
 * collective's label and args carry the algorithm the library ran. */
#include "ts_runtime.h"

#include <cjson/cJSON.h>
#include <string.h>

static cJSON *meta(const char *what, int pid, int tid, const char *name) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", what);
  cJSON_AddStringToObject(e, "ph", "M");
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON *args = cJSON_AddObjectToObject(e, "args");
  cJSON_AddStringToObject(args, "name", name);
  return e;
}

ts_status_t ts_rt_trace_json(const char *const *instr_names, int nranks, const ts_rt_event_t *const *events,
                             const size_t *n, const char *const *hosts, ts_buf_t *out) {
  cJSON *root = cJSON_CreateObject();
  cJSON *list = root ? cJSON_AddArrayToObject(root, "traceEvents") : NULL;
  if (!list) {
    cJSON_Delete(root);
    return TS_ERR_NOMEM;
  }
  cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
  for (int r = 0; r < nranks; r++) {
    char name[128];
    snprintf(name, sizeof name, "rank %d%s%s", r, hosts && hosts[r] ? " on " : "", hosts && hosts[r] ? hosts[r] : "");
    cJSON_AddItemToArray(list, meta("process_name", r, 0, name));
    cJSON_AddItemToArray(list, meta("thread_name", r, 0, "compute"));
    cJSON_AddItemToArray(list, meta("thread_name", r, 1, "collectives"));
    for (size_t k = 0; k < n[r]; k++) {
      const ts_rt_event_t *ev = &events[r][k];
      cJSON *e = cJSON_CreateObject();
      if (!e) continue;
      /* a collective's algorithm in its label: "ar [hierarchical]" */
      char label[256], algo[sizeof ev->algorithm + 1];
      snprintf(algo, sizeof algo, "%.*s", (int)sizeof ev->algorithm, ev->algorithm); /* bytes from a peer */
      snprintf(label, sizeof label, "%s%s%s%s", ev->instr >= 0 ? instr_names[ev->instr] : "?", *algo ? " [" : "",
               algo, *algo ? "]" : "");
      cJSON_AddStringToObject(e, "name", label);
      cJSON_AddStringToObject(e, "cat", ev->is_collective ? "collective" : "compute");
      cJSON_AddStringToObject(e, "ph", "X");
      cJSON_AddNumberToObject(e, "pid", r);
      cJSON_AddNumberToObject(e, "tid", ev->is_collective ? 1 : 0);
      cJSON_AddNumberToObject(e, "ts", (double)ev->t_begin_ns / 1e3);
      cJSON_AddNumberToObject(e, "dur", (double)(ev->t_end_ns - ev->t_begin_ns) / 1e3);
      cJSON *args = cJSON_AddObjectToObject(e, "args");
      cJSON_AddNumberToObject(args, "step", (double)ev->step);
      if (*algo) cJSON_AddStringToObject(args, "algorithm", algo);
      cJSON_AddItemToArray(list, e);
    }
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return TS_ERR_NOMEM;
  ts_buf_puts(out, text);
  cJSON_free(text);
  return out->oom ? TS_ERR_NOMEM : TS_OK;
}
