/* SVG plots of a performance table, written next to it: for collectives,
 * throughput vs tensor size on log-log axes, one panel per collective, one
 * colour per device count and one dash per transfer scheme; for GEMMs,
 * FLOP/s vs FLOPs per dot, one panel per dtype, one colour per batch size.
 * Plain SVG 1.1 text, no scripts; every line carries a <title> naming it. */
#include "bench_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PANEL_W = 440, PANEL_H = 300, M_LEFT = 70, M_RIGHT = 16, M_TOP = 30, M_BOTTOM = 46, HEADER = 40 };

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
static const char *const dashes[] = {"", "7,4", "2,3"};

typedef struct {
  double x, y;
} xy_t;

typedef struct {
  char label[128]; /* the line's <title> */
  int color, dash;
  int64_t order; /* series sort key within a panel */
  xy_t *p;
  size_t n, cap;
} series_t;

typedef struct {
  char title[96];
  series_t *s;
  size_t n, cap;
} panel_t;

typedef struct {
  char text[96];
  int color, dash; /* dash < 0: a colour swatch only; color < 0: a dash sample in grey */
} legend_t;

typedef struct {
  panel_t p[32];
  size_t n;
  legend_t legend[24];
  size_t nlegend;
  bool lines;  /* connect the points of a series */
  int xbase;   /* 2: ticks at powers of two, labelled as sizes; 10: decades */
  const char *xlabel, *ylabel;
} figure_t;

static void figure_free(figure_t *f) {
  for (size_t i = 0; i < f->n; i++) {
    for (size_t j = 0; j < f->p[i].n; j++) ts_free(f->p[i].s[j].p);
    ts_free(f->p[i].s);
  }
}

static panel_t *panel_get(figure_t *f, const char *title) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->p[i].title, title) == 0) return &f->p[i];
  if (f->n == sizeof f->p / sizeof f->p[0]) return NULL;
  panel_t *p = &f->p[f->n++];
  memset(p, 0, sizeof *p);
  snprintf(p->title, sizeof p->title, "%s", title);
  return p;
}

static series_t *series_get(panel_t *p, const char *label, int color, int dash, int64_t order) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->s[i].label, label) == 0) return &p->s[i];
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    series_t *s = ts_realloc(p->s, cap * sizeof *s);
    if (!s) return NULL;
    p->s = s, p->cap = cap;
  }
  series_t *s = &p->s[p->n++];
  memset(s, 0, sizeof *s);
  snprintf(s->label, sizeof s->label, "%s", label);
  s->color = color, s->dash = dash, s->order = order;
  return s;
}

static bool series_add(series_t *s, double x, double y) {
  if (!(x > 0) || !(y > 0)) return true; /* log axes: nothing to draw */
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    xy_t *p = ts_realloc(s->p, cap * sizeof *p);
    if (!p) return false;
    s->p = p, s->cap = cap;
  }
  s->p[s->n++] = (xy_t){x, y};
  return true;
}

static int cmp_xy(const void *a, const void *b) {
  const xy_t *p = a, *q = b;
  return p->x < q->x ? -1 : p->x > q->x;
}

static int cmp_series(const void *a, const void *b) {
  const series_t *p = a, *q = b;
  return p->order < q->order ? -1 : p->order > q->order;
}

static void put_escaped(ts_buf_t *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': ts_buf_puts(b, "&amp;"); break;
    case '<': ts_buf_puts(b, "&lt;"); break;
    case '>': ts_buf_puts(b, "&gt;"); break;
    case '"': ts_buf_puts(b, "&quot;"); break;
    default: ts_buf_putc(b, *s);
    }
  }
}

static void tick_label(int base, double v, char *buf, size_t n) {
  if (base == 2) ts_bench_format_bytes((int64_t)llround(v), buf, n);
  else snprintf(buf, n, "%g", v);
}

/* One panel at (ox, oy): frame, grid, ticks, the series, the title. */
static void render_panel(ts_buf_t *b, const figure_t *f, const panel_t *p, int ox, int oy, double lx0, double lx1) {
  int pw = PANEL_W - M_LEFT - M_RIGHT, ph = PANEL_H - M_TOP - M_BOTTOM;
  int x0 = ox + M_LEFT, y0 = oy + M_TOP;
  double ymin = INFINITY, ymax = 0;
  for (size_t i = 0; i < p->n; i++)
    for (size_t j = 0; j < p->s[i].n; j++) {
      if (p->s[i].p[j].y < ymin) ymin = p->s[i].p[j].y;
      if (p->s[i].p[j].y > ymax) ymax = p->s[i].p[j].y;
    }
  if (!(ymax > 0)) ymin = 1, ymax = 10;
  double ly0 = floor(log10(ymin)), ly1 = ceil(log10(ymax));
  if (ly1 <= ly0) ly1 = ly0 + 1;
#define PX(v) (x0 + (f->xbase == 2 ? log2(v) - lx0 : log10(v) - lx0) / (lx1 - lx0) * pw)
#define PY(v) (y0 + ph - (log10(v) - ly0) / (ly1 - ly0) * ph)
  ts_buf_printf(b, "<g class=\"panel\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#444\"/>\n",
                x0, y0, pw, ph);
  ts_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\" text-anchor=\"middle\">", x0 + pw / 2,
                oy + 20);
  put_escaped(b, p->title);
  ts_buf_puts(b, "</text>\n");
  /* y: decades, and 2 and 5 between them when the range is short */
  for (double d = ly0; d <= ly1; d++) {
    static const double mult[] = {1, 2, 5};
    for (int m = 0; m < 3; m++) {
      if (m > 0 && ly1 - ly0 > 2) break;
      double v = mult[m] * pow(10, d);
      if (log10(v) > ly1 + 1e-9) break;
      double y = PY(v);
      char lab[32];
      snprintf(lab, sizeof lab, "%g", v);
      ts_buf_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, y, x0 + pw, y);
      ts_buf_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", x0 - 4, y + 4, lab);
    }
  }
  /* x: powers of the base, thinned to at most 8 labels */
  int k0 = (int)ceil(lx0 - 1e-9), k1 = (int)floor(lx1 + 1e-9);
  int step = (k1 - k0) / 8 + 1;
  if (f->xbase == 2 && step % 2) step += step > 1; /* sizes read best at 1K, 4K, 16K... */
  for (int k = k0; k <= k1; k += step) {
    double v = pow(f->xbase, k), x = PX(v);
    char lab[32];
    tick_label(f->xbase, v, lab, sizeof lab);
    ts_buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, y0, x, y0 + ph);
    ts_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", x, y0 + ph + 15,
                  lab);
  }
  ts_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", x0 + pw / 2, y0 + ph + 34);
  put_escaped(b, f->xlabel);
  ts_buf_printf(b, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 %d %d)\">",
                ox + 16, y0 + ph / 2, ox + 16, y0 + ph / 2);
  put_escaped(b, f->ylabel);
  ts_buf_puts(b, "</text>\n");
  for (size_t i = 0; i < p->n; i++) {
    const series_t *s = &p->s[i];
    const char *col = palette[s->color % (int)(sizeof palette / sizeof palette[0])];
    ts_buf_puts(b, "<g class=\"series\">\n<title>");
    put_escaped(b, s->label);
    ts_buf_puts(b, "</title>\n");
    if (f->lines && s->n > 1) {
      ts_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"", col);
      if (*dashes[s->dash]) ts_buf_printf(b, " stroke-dasharray=\"%s\"", dashes[s->dash]);
      ts_buf_puts(b, " points=\"");
      for (size_t j = 0; j < s->n; j++) ts_buf_printf(b, "%s%.1f,%.1f", j ? " " : "", PX(s->p[j].x), PY(s->p[j].y));
      ts_buf_puts(b, "\"/>\n");
    }
    for (size_t j = 0; j < s->n; j++)
      ts_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", PX(s->p[j].x), PY(s->p[j].y),
                    f->lines ? "1.8" : "2.5", col);
    ts_buf_puts(b, "</g>\n");
  }
  ts_buf_puts(b, "</g>\n");
#undef PX
#undef PY
}

static ts_status_t render(ts_buf_t *b, figure_t *f, const char *title) {
  size_t cols = f->n < 3 ? (f->n ? f->n : 1) : 3, rows = f->n ? (f->n + cols - 1) / cols : 1;
  int legend_rows = (int)(f->nlegend + 3) / 4;
  int width = (int)cols * PANEL_W, height = HEADER + (int)rows * PANEL_H + 20 + legend_rows * 20;
  /* x range shared by every panel, so panels compare at a glance */
  double xmin = INFINITY, xmax = 0;
  for (size_t i = 0; i < f->n; i++) {
    panel_t *p = &f->p[i];
    qsort(p->s, p->n, sizeof *p->s, cmp_series);
    for (size_t j = 0; j < p->n; j++) {
      qsort(p->s[j].p, p->s[j].n, sizeof *p->s[j].p, cmp_xy);
      for (size_t k = 0; k < p->s[j].n; k++) {
        if (p->s[j].p[k].x < xmin) xmin = p->s[j].p[k].x;
        if (p->s[j].p[k].x > xmax) xmax = p->s[j].p[k].x;
      }
    }
  }
  if (!(xmax > 0)) xmin = 1, xmax = f->xbase;
  double lx0 = f->xbase == 2 ? floor(log2(xmin)) : floor(log10(xmin));
  double lx1 = f->xbase == 2 ? ceil(log2(xmax)) : ceil(log10(xmax));
  if (lx1 <= lx0) lx0 -= 1, lx1 += 1;
  ts_buf_printf(b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n"
                "<text x=\"%d\" y=\"26\" font-size=\"16\" text-anchor=\"middle\">",
                width, height, width, height, width / 2);
  put_escaped(b, title);
  ts_buf_puts(b, "</text>\n");
  if (f->n == 0)
    ts_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"14\" text-anchor=\"middle\">no measurements</text>\n",
                  width / 2, HEADER + PANEL_H / 2);
  for (size_t i = 0; i < f->n; i++)
    render_panel(b, f, &f->p[i], (int)(i % cols) * PANEL_W, HEADER + (int)(i / cols) * PANEL_H, lx0, lx1);
  int ly = HEADER + (int)rows * PANEL_H + 10;
  ts_buf_puts(b, "<g class=\"legend\">\n");
  for (size_t i = 0; i < f->nlegend; i++) {
    const legend_t *l = &f->legend[i];
    int x = 20 + (int)(i % 4) * (width - 40) / 4, y = ly + (int)(i / 4) * 20;
    const char *col = l->color >= 0 ? palette[l->color % (int)(sizeof palette / sizeof palette[0])] : "#555";
    ts_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"", x, y, x + 28, y,
                  col, l->dash < 0 ? "6" : "2");
    if (l->dash > 0) ts_buf_printf(b, " stroke-dasharray=\"%s\"", dashes[l->dash]);
    ts_buf_printf(b, "/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\">", x + 34, y + 4);
    put_escaped(b, l->text);
    ts_buf_puts(b, "</text>\n");
  }
  ts_buf_puts(b, "</g>\n</svg>\n");
  return b->oom ? TS_ERR_NOMEM : TS_OK;
}

static void legend_add(figure_t *f, const char *text, int color, int dash) {
  if (f->nlegend == sizeof f->legend / sizeof f->legend[0]) return;
  legend_t *l = &f->legend[f->nlegend++];
  snprintf(l->text, sizeof l->text, "%s", text);
  l->color = color, l->dash = dash;
}

static bool has_device(const ts_perf_table_t *t, const char *key) {
  for (size_t i = 0; i < ts_perf_table_num_devices(t); i++)
    if (strcmp(ts_perf_table_device(t, i), key) == 0) return true;
  return false;
}

static int dash_of(ts_transfer_scheme_t s) {
  switch (s) {
  case TS_SCHEME_STRIDED: case TS_SCHEME_TWO_WAY_ALL_MUTUAL: return 1;
  case TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL: return 2;
  default: return 0;
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The values series are coloured by (device counts, batch sizes): the
 * first 8 distinct ones; colour i is v[i] once they are sorted. */
typedef struct {
  int64_t v[8];
  int n;
} colors_t;

static void colors_add(colors_t *c, int64_t v) {
  for (int i = 0; i < c->n; i++)
    if (c->v[i] == v) return;
  if (c->n < 8) c->v[c->n++] = v;
}

static void colors_sort(colors_t *c) { qsort(c->v, (size_t)c->n, sizeof *c->v, cmp_i64); }

/* The colour of v; c->n (past the last) for a value beyond the first 8. */
static int color_of(const colors_t *c, int64_t v) {
  int i = 0;
  while (i < c->n && c->v[i] != v) i++;
  return i;
}

/* A legend entry per colour: "<prefix><value><suffix>". */
static void legend_colors(figure_t *f, const colors_t *c, const char *prefix, const char *suffix) {
  for (int i = 0; i < c->n; i++) {
    char text[64];
    snprintf(text, sizeof text, "%s%lld%s", prefix, (long long)c->v[i], suffix);
    legend_add(f, text, i, -1);
  }
}

/* Collectives: a panel per collective, a colour per device count, a dash
 * per transfer scheme. */
static ts_status_t plot_collectives(figure_t *f, const ts_coll_measurement_t *ms, size_t n) {
  *f = (figure_t){.lines = true, .xbase = 2, .xlabel = "tensor size (bytes)", .ylabel = "throughput (GB/s, 1e9 B/s)"};
  /* colours follow the device counts in increasing order */
  colors_t devs = {0};
  bool many_types = false, schemes[TS_SCHEME_COUNT] = {false};
  for (size_t i = 0; i < n; i++) {
    colors_add(&devs, ms[i].devices_per_group);
    many_types |= ms[i].element_type != ms[0].element_type;
    schemes[ms[i].scheme] = true;
  }
  colors_sort(&devs);
  for (int k = 0; k < TS_COST_COLL_COUNT; k++) {
    for (size_t i = 0; i < n; i++) {
      const ts_coll_measurement_t *m = &ms[i];
      if ((int)m->kind != k) continue;
      int color = color_of(&devs, m->devices_per_group);
      char label[128];
      snprintf(label, sizeof label, "%s, %lld devices, %s%s%s", ts_coll_kind_name(m->kind),
               (long long)m->devices_per_group, ts_transfer_scheme_name(m->scheme), many_types ? ", " : "",
               many_types ? ts_primitive_type_name(m->element_type) : "");
      panel_t *p = panel_get(f, ts_coll_kind_name(m->kind));
      int64_t order = (m->devices_per_group * TS_SCHEME_COUNT + m->scheme) * 64 + m->element_type;
      series_t *s = p ? series_get(p, label, color, dash_of(m->scheme), order) : NULL;
      if (!p) continue; /* more panels than fit: cannot happen with five kinds */
      if (!s || !series_add(s, (double)m->tensor_bytes, (double)m->throughput_bytes_per_sec / 1e9)) return TS_ERR_NOMEM;
    }
  }
  legend_colors(f, &devs, "", " devices");
  static const char *const dash_text[] = {"non-rail-aligned / one-way", "rail-aligned / two-way-all-mutual",
                                          "two-way-has-non-mutual"};
  bool dash_used[3] = {false, false, false};
  for (int s = 0; s < TS_SCHEME_COUNT; s++)
    if (schemes[s]) dash_used[dash_of((ts_transfer_scheme_t)s)] = true;
  for (int d = 0; d < 3; d++)
    if (dash_used[d]) legend_add(f, dash_text[d], -1, d);
  return TS_OK;
}

/* GEMMs: a panel per dtype, a colour per batch size. */
static ts_status_t plot_gemms(figure_t *f, const ts_gemm_measurement_t *ms, size_t n) {
  *f = (figure_t){.lines = false, .xbase = 10, .xlabel = "FLOPs per dot (2bmnk)", .ylabel = "GFLOP/s"};
  colors_t bs = {0};
  for (size_t i = 0; i < n; i++) colors_add(&bs, ms[i].b);
  colors_sort(&bs);
  for (size_t i = 0; i < n; i++) {
    const ts_gemm_measurement_t *m = &ms[i];
    int color = color_of(&bs, m->b);
    char label[128];
    snprintf(label, sizeof label, "%s, b=%lld", m->dtype, (long long)m->b);
    panel_t *p = panel_get(f, m->dtype);
    if (!p) continue; /* more dtypes than panels: the rest are not drawn */
    series_t *s = series_get(p, label, color, 0, m->b);
    double flops = 2.0 * (double)m->b * (double)m->m * (double)m->n * (double)m->k;
    if (!s || !series_add(s, flops, (double)m->flops / 1e9)) return TS_ERR_NOMEM;
  }
  legend_colors(f, &bs, "batch b=", "");
  return TS_OK;
}

/* The plot of the table's measurements on device_key (none when the table
 * does not have it): its collectives, or with `gemm` its GEMMs. */
static ts_status_t plot(const ts_perf_table_t *t, const char *device_key, bool gemm, ts_buf_t *out, ts_diag_t *diag) {
  ts_coll_measurement_t *colls = NULL;
  ts_gemm_measurement_t *gemms = NULL;
  size_t n = 0;
  if (has_device(t, device_key))
    TS_CHECK(gemm ? ts_perf_table_gemms(t, device_key, &gemms, &n, diag)
                  : ts_perf_table_collectives(t, device_key, &colls, &n, diag));
  figure_t f;
  ts_status_t st = gemm ? plot_gemms(&f, gemms, n) : plot_collectives(&f, colls, n);
  char title[320];
  snprintf(title, sizeof title, "%s on %s", gemm ? "GEMM FLOP/s of the dot kernel" : "collective throughput",
           device_key);
  if (st == TS_OK) st = render(out, &f, title);
  figure_free(&f);
  ts_free(colls);
  ts_free(gemms);
  return st;
}

ts_status_t pt_svg_collectives(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag) {
  return plot(t, device_key, false, out, diag);
}

ts_status_t pt_svg_gemm(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag) {
  return plot(t, device_key, true, out, diag);
}
