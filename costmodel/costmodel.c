/* The cost model: performance tables and the analytical model behind one
 * interface, built from the CLI's --cost-model and --cost-model-preset
 * values (issue 8). Tables answer first; the analytical model prices what
 * they do not cover, as XLA's SolLatencyEstimator does. */
#include "costmodel_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const ts_cost_source_ops_t *ops;
  void *self;
  bool analytical;
  bool implicit; /* added by a preset; an explicit analytical spec replaces it */
} source_t;

struct ts_costmodel {
  source_t *src;
  size_t n;
  ts_interp_mode_t mode;
  bool have_preset;
  ts_scurve_config_t preset_cfg;
  char *device_key; /* the preset's table device, or NULL */
  ts_roofline_t roofline; /* the preset's, else the host's */
};

ts_status_t ts_costmodel_create(ts_costmodel_t **out) {
  ts_costmodel_t *m = ts_calloc(1, sizeof *m);
  if (!m) return TS_ERR_NOMEM;
  m->mode = TS_INTERP_WEIGHTED;
  (void)ts_roofline_preset("host", &m->roofline);
  *out = m;
  return TS_OK;
}

static void source_destroy(source_t *s) {
  if (s->ops->destroy) s->ops->destroy(s->self);
}

void ts_costmodel_destroy(ts_costmodel_t *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) source_destroy(&m->src[i]);
  ts_free(m->src);
  ts_free(m->device_key);
  ts_free(m);
}

static ts_status_t add_source(ts_costmodel_t *m, const ts_cost_source_ops_t *ops, void *self, bool analytical,
                              bool implicit) {
  source_t *grown = ts_realloc(m->src, (m->n + 1) * sizeof *grown);
  if (!grown) {
    if (ops->destroy) ops->destroy(self);
    return TS_ERR_NOMEM;
  }
  m->src = grown;
  m->src[m->n++] = (source_t){ops, self, analytical, implicit};
  return TS_OK;
}

ts_status_t ts_costmodel_add_source(ts_costmodel_t *m, const ts_cost_source_ops_t *ops, void *self, bool analytical) {
  return add_source(m, ops, self, analytical, false);
}

void ts_costmodel_set_interp_mode(ts_costmodel_t *m, ts_interp_mode_t mode) { m->mode = mode; }
size_t ts_costmodel_num_sources(const ts_costmodel_t *m) { return m->n; }

/* ---- the analytical source ------------------------------------------------ */

typedef struct {
  ts_scurve_config_t cfg;
} analytical_t;

static ts_status_t analytical_coll(void *self, ts_interp_mode_t mode, const ts_coll_query_t *q, double *seconds) {
  const analytical_t *a = self;
  if (q->slices <= 1) return TS_ERR_UNSUPPORTED; /* within a slice: tables */
  int64_t gpus = q->devices, nodes = q->slices;
  if (q->kind == TS_COLL_COLLECTIVE_PERMUTE) gpus = 2, nodes = 2; /* XLA: DCN send/recv, hosts = 2 */
  if (gpus < nodes) return TS_ERR_UNSUPPORTED;
  return ts_scurve_time(&a->cfg, q->kind, q->tensor_bytes, gpus, nodes, seconds);
}

static ts_status_t analytical_dot(void *self, ts_interp_mode_t mode, const ts_dot_query_t *q, double *seconds) {
  return TS_ERR_UNSUPPORTED;
}

static void analytical_destroy(void *self) { ts_free(self); }

static const ts_cost_source_ops_t analytical_ops = {"analytical", analytical_coll, analytical_dot, analytical_destroy};

static ts_status_t add_analytical(ts_costmodel_t *m, const ts_scurve_config_t *cfg, bool implicit) {
  analytical_t *a = ts_malloc(sizeof *a);
  if (!a) return TS_ERR_NOMEM;
  a->cfg = *cfg;
  if (!implicit) { /* an explicit model replaces the preset's */
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
      if (m->src[i].implicit) source_destroy(&m->src[i]);
      else m->src[k++] = m->src[i];
    }
    m->n = k;
  }
  return add_source(m, &analytical_ops, a, true, implicit);
}

/* ---- the table source ------------------------------------------------------ */

typedef struct {
  ts_coll_interp_t *coll; /* NULL for a GEMM table */
  ts_gemm_interp_t *gemm; /* NULL for a collective table */
} table_t;

static ts_status_t table_coll(void *self, ts_interp_mode_t mode, const ts_coll_query_t *q, double *seconds) {
  const table_t *t = self;
  if (!t->coll || q->slices > 1) return TS_ERR_UNSUPPORTED; /* tables are measured within a slice */
  return ts_coll_interp_time(t->coll, mode, q->kind, q->scheme, q->tensor_bytes, q->devices, seconds);
}

static ts_status_t table_dot(void *self, ts_interp_mode_t mode, const ts_dot_query_t *q, double *seconds) {
  const table_t *t = self;
  if (!t->gemm) return TS_ERR_UNSUPPORTED;
  return ts_gemm_interp_time(t->gemm, mode, q->b, q->m, q->n, q->k, q->dtype, seconds);
}

static void table_destroy(void *self) {
  table_t *t = self;
  ts_coll_interp_destroy(t->coll);
  ts_gemm_interp_destroy(t->gemm);
  ts_free(t);
}

static const ts_cost_source_ops_t table_ops = {"table", table_coll, table_dot, table_destroy};

/* PATH[@DEVICE]: the device is the one named, else the preset's, else the
 * table's only one. */
static ts_status_t add_table(ts_costmodel_t *m, const char *item, ts_diag_t *diag) {
  char *path = ts_strdup(item);
  if (!path) return TS_ERR_NOMEM;
  const char *device = m->device_key;
  char *at = strrchr(path, '@');
  if (at && !strchr(at, '/')) {
    *at = 0;
    device = at + 1;
  }
  ts_perf_table_t *pt = NULL;
  table_t *t = NULL;
  ts_status_t st;
  if (!*path) {
    ts_diag_plain(diag, "cost model table '%s': empty path", item);
    st = TS_ERR_INVALID_ARGUMENT;
    goto out;
  }
  TS_CHECK_GOTO(ts_perf_table_load(path, &pt, diag), st, out);
  size_t nd = ts_perf_table_num_devices(pt);
  if (!device || !*device) {
    if (nd != 1) {
      ts_buf_t b = {0};
      for (size_t i = 0; i < nd; i++) ts_buf_printf(&b, "%s'%s'", i ? ", " : "", ts_perf_table_device(pt, i));
      ts_diag_error(diag, &(ts_source_t){.name = path}, (ts_loc_t){0, 0},
                    nd ? "the table has %zu devices (%s): choose one with --cost-model-preset or table:PATH@DEVICE"
                       : "the table has %zu devices%s",
                    nd, b.data ? b.data : "");
      ts_buf_free(&b);
      st = TS_ERR_INVALID_ARGUMENT;
      goto out;
    }
    device = ts_perf_table_device(pt, 0);
  }
  t = ts_calloc(1, sizeof *t);
  if (!t) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  ts_diag_t d = {0};
  if (ts_perf_table_kind(pt) == TS_PERF_TABLE_GEMM) st = ts_gemm_interp_create(pt, device, &t->gemm, &d);
  else st = ts_coll_interp_create(pt, device, &t->coll, &d);
  if (st < 0) { /* name the file: the interpolators only know the table */
    const char *txt = d.text ? d.text : "error: cannot read the table\n";
    if (strncmp(txt, "error: ", 7) == 0) txt += 7;
    ts_diag_error(diag, &(ts_source_t){.name = path}, (ts_loc_t){0, 0}, "%.*s", (int)strcspn(txt, "\n"), txt);
    ts_diag_free(&d);
    goto out;
  }
  ts_diag_free(&d);
  st = add_source(m, &table_ops, t, false, false);
  t = NULL;
out:
  if (t) table_destroy(t);
  ts_perf_table_destroy(pt);
  ts_free(path);
  return st;
}

/* ---- specs and presets ----------------------------------------------------- */

void ts_costmodel_host_device_key(char *buf, size_t n) {
  char model[200] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) != 0) continue;
      const char *c = strchr(line, ':');
      if (!c) continue;
      c++;
      while (*c == ' ' || *c == '\t') c++;
      size_t l = strcspn(c, "\n");
      if (l >= sizeof model) l = sizeof model - 1;
      memcpy(model, c, l);
      model[l] = 0;
      break;
    }
    fclose(f);
  }
  snprintf(buf, n, "host:%s", model);
}

ts_status_t ts_costmodel_set_preset(ts_costmodel_t *m, const char *preset, ts_diag_t *diag) {
  const char *scurve, *key;
  char host[256];
  if (strcmp(preset, "h100") == 0) {
    scurve = "h100", key = "sm_90";
  } else if (strcmp(preset, "b200") == 0) {
    scurve = "b200", key = "sm_100_B200";
  } else if (strcmp(preset, "host") == 0) {
    /* Until the collector has measured this machine (issue 9), its network
     * knobs are XLA's defaults for an unknown device. */
    ts_costmodel_host_device_key(host, sizeof host);
    scurve = "unknown", key = host;
  } else {
    ts_diag_plain(diag, "cost model preset '%s' is not one of h100, b200, host", preset);
    return TS_ERR_INVALID_ARGUMENT;
  }
  char *k = ts_strdup(key);
  if (!k) return TS_ERR_NOMEM;
  ts_free(m->device_key);
  m->device_key = k;
  TS_CHECK(ts_scurve_preset(scurve, &m->preset_cfg));
  TS_CHECK(ts_roofline_preset(preset, &m->roofline));
  m->have_preset = true;
  return TS_OK;
}

/* add(m, item, diag) for each item of the list s, separated by sep (empty
 * items included), up to the first error. */
static ts_status_t each_item(ts_costmodel_t *m, const char *s, const char *sep,
                             ts_status_t (*add)(ts_costmodel_t *m, const char *item, ts_diag_t *diag), ts_diag_t *diag) {
  for (;;) {
    size_t n = strcspn(s, sep);
    char *item = ts_malloc(n + 1);
    if (!item) return TS_ERR_NOMEM;
    memcpy(item, s, n);
    item[n] = 0;
    ts_status_t st = add(m, item, diag);
    ts_free(item);
    TS_CHECK(st);
    if (!s[n]) return TS_OK;
    s += n + 1;
  }
}

static ts_status_t add_one_spec(ts_costmodel_t *m, const char *spec, ts_diag_t *diag) {
  if (strcmp(spec, "analytical") == 0 || strncmp(spec, "analytical:", 11) == 0) {
    ts_scurve_config_t cfg;
    if (m->have_preset) cfg = m->preset_cfg;
    else TS_CHECK(ts_scurve_preset("unknown", &cfg));
    if (spec[10] == ':') TS_CHECK(ts_scurve_parse_options(spec + 11, &cfg, diag));
    return add_analytical(m, &cfg, false);
  }
  if (strncmp(spec, "table:", 6) == 0) {
    const char *s = spec + 6;
    if (!*s) {
      ts_diag_plain(diag, "cost model '%s': no table path (expected table:PATH[,PATH...])", spec);
      return TS_ERR_INVALID_ARGUMENT;
    }
    return each_item(m, s, ",", add_table, diag);
  }
  ts_diag_plain(diag, "cost model '%s': unknown kind (expected analytical[:OPTIONS] or table:PATH[,PATH...])", spec);
  return TS_ERR_INVALID_ARGUMENT;
}

ts_status_t ts_costmodel_add_spec(ts_costmodel_t *m, const char *spec, ts_diag_t *diag) {
  return each_item(m, spec, ";", add_one_spec, diag);
}

ts_status_t ts_costmodel_parse_spec(const char *spec, const char *preset, ts_costmodel_t **out, ts_diag_t *diag) {
  ts_costmodel_t *m;
  TS_CHECK(ts_costmodel_create(&m));
  ts_status_t st = TS_OK;
  if (preset) {
    TS_CHECK_GOTO(ts_costmodel_set_preset(m, preset, diag), st, fail);
    TS_CHECK_GOTO(add_analytical(m, &m->preset_cfg, true), st, fail);
  }
  if (spec) TS_CHECK_GOTO(ts_costmodel_add_spec(m, spec, diag), st, fail);
  *out = m;
  return TS_OK;
fail:
  ts_costmodel_destroy(m);
  return st;
}

const ts_roofline_t *ts_costmodel_roofline(const ts_costmodel_t *m) { return &m->roofline; }

void ts_costmodel_share_host(ts_costmodel_t *m, double cores, int devices) {
  ts_roofline_share_host(&m->roofline, cores, devices);
}

int64_t ts_costmodel_slice_size(const ts_costmodel_t *m) {
  for (size_t i = 0; i < m->n; i++) {
    if (m->src[i].ops != &analytical_ops) continue;
    const analytical_t *a = m->src[i].self;
    return a->cfg.partition_size > 0 ? a->cfg.partition_size : a->cfg.gpus_per_node;
  }
  return 0;
}

/* ---- queries ---------------------------------------------------------------- */

/* Tables first, then the analytical sources; the first that covers it answers. */
#define ASK(m, call, source)                                                    \
  for (int pass = 0; pass < 2; pass++) {                                        \
    for (size_t i = 0; i < (m)->n; i++) {                                       \
      const source_t *s_ = &(m)->src[i];                                        \
      if (s_->analytical != (pass == 1)) continue;                              \
      ts_status_t st_ = (call);                                                 \
      if (st_ == TS_ERR_UNSUPPORTED) continue;                                  \
      if (st_ >= 0 && (source)) *(source) = s_->ops->name;                      \
      return st_;                                                               \
    }                                                                           \
  }                                                                             \
  return TS_ERR_UNSUPPORTED

ts_status_t ts_costmodel_collective_time(const ts_costmodel_t *m, const ts_coll_query_t *q, double *seconds,
                                         const char **source) {
  ASK(m, s_->ops->collective_time ? s_->ops->collective_time(s_->self, m->mode, q, seconds) : TS_ERR_UNSUPPORTED,
      source);
}

ts_status_t ts_costmodel_dot_time(const ts_costmodel_t *m, const ts_dot_query_t *q, double *seconds,
                                  const char **source) {
  ASK(m, s_->ops->dot_time ? s_->ops->dot_time(s_->self, m->mode, q, seconds) : TS_ERR_UNSUPPORTED, source);
}
