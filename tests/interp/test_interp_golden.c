/* Runs one golden HLO file through the reference interpreter and compares
 * the result with the values written in its comments:
 *   // EXPECT: <shape> <literal>    one per leaf of the flattened root
 *   // PARAM: <shape> <literal>     one per entry parameter, in order
 *   // TOLERANCE: <rel>             floats: |got - want| <= rel * max(1, |want|)
 *   // ERROR: <substring>           the run must fail with this in its message
 *   // ARGS: --num-partitions N | --devices N
 * With --devices N (N > 0) the module runs on N simulated devices and every
 * device's result must match the EXPECT lines, unless EXPECT-DEVICE lines
 * (`// EXPECT-DEVICE d: <shape> <literal>`) give per-device values. */
#include "ts_interp.h"
#include "interp_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINES 256

typedef struct {
  char *expect[MAX_LINES];
  int nexpect;
  char *dexpect[MAX_LINES]; /* EXPECT-DEVICE text after "d:" */
  int ddev[MAX_LINES];
  int ndexpect;
  char *param[MAX_LINES];
  int nparam;
  double tol;
  char *error;
  int64_t num_partitions;
  int ndevices;
} golden_t;

static char *dup_line(const char *s) {
  const char *e = strchr(s, '\n');
  size_t n = e ? (size_t)(e - s) : strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r')) n--;
  char *r = malloc(n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

static bool starts(const char **p, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(*p, prefix, n) != 0) return false;
  *p += n;
  while (**p == ' ') (*p)++;
  return true;
}

static void scan(const char *text, golden_t *g) {
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *p = l;
    while (*p == ' ' || *p == '\t') p++;
    if (!starts(&p, "//")) continue;
    if (starts(&p, "EXPECT-DEVICE")) {
      int d = atoi(p);
      const char *c = strchr(p, ':');
      if (c && g->ndexpect < MAX_LINES) {
        g->ddev[g->ndexpect] = d;
        c++;
        while (*c == ' ') c++;
        g->dexpect[g->ndexpect++] = dup_line(c);
      }
    } else if (starts(&p, "EXPECT:")) {
      if (g->nexpect < MAX_LINES) g->expect[g->nexpect++] = dup_line(p);
    } else if (starts(&p, "PARAM:")) {
      if (g->nparam < MAX_LINES) g->param[g->nparam++] = dup_line(p);
    } else if (starts(&p, "TOLERANCE:")) {
      g->tol = atof(p);
    } else if (starts(&p, "ERROR:")) {
      g->error = dup_line(p);
    } else if (starts(&p, "ARGS:")) {
      const char *q;
      if ((q = strstr(p, "--num-partitions"))) g->num_partitions = atoll(q + 16);
      if ((q = strstr(p, "--devices"))) g->ndevices = atoi(q + 9);
    }
  }
}

/* "<shape> <literal>" -> a value, through the HLO parser. The module is
 * returned so the value's shape stays alive. */
static ts_status_t parse_value(const char *text, ts_hlo_module_t **m, ts_value_t **v) {
  /* The shape ends at the first space outside brackets/braces/parens. */
  int depth = 0;
  const char *p = text;
  for (; *p; p++) {
    if (*p == '[' || *p == '{' || *p == '(') depth++;
    else if (*p == ']' || *p == '}' || *p == ')') depth--;
    else if (*p == ' ' && depth == 0) break;
  }
  ts_buf_t b = {0};
  ts_buf_printf(&b, "HloModule lit\nENTRY e {\n  ROOT c = %.*s constant(%s)\n}\n", (int)(p - text), text,
                *p ? p + 1 : "");
  ts_source_t src = {"<literal>", b.data, b.len};
  ts_diag_t dg = {0};
  ts_status_t st = ts_hlo_parse(&src, NULL, m, &dg);
  if (st != TS_OK) {
    fprintf(stderr, "bad literal '%s':\n%s", text, dg.text ? dg.text : "");
  } else {
    st = ts_value_from_literal((*m)->entry->root->literal, v);
  }
  ts_diag_free(&dg);
  ts_buf_free(&b);
  return st;
}

static bool same_float(double got, double want, double tol) {
  if (isnan(want)) return isnan(got);
  if (tol == 0) return got == want && signbit(got) == signbit(want);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

static int compare(const ts_array_t *got, const ts_array_t *want, double tol, const char *what) {
  if (got->elem != want->elem || got->rank != want->rank) {
    fprintf(stderr, "%s: got %s rank %d, expected %s rank %d\n", what, ts_elem_name(got->elem), got->rank,
            ts_elem_name(want->elem), want->rank);
    return 1;
  }
  for (int d = 0; d < got->rank; d++)
    if (got->dims[d] != want->dims[d]) {
      fprintf(stderr, "%s: dimension %d is %lld, expected %lld\n", what, d, (long long)got->dims[d],
              (long long)want->dims[d]);
      return 1;
    }
  int64_t n = ts_array_count(got);
  int bad = 0;
  for (int64_t k = 0; k < n; k++) {
    bool ok;
    char gs[64], ws[64];
    if (ts_elem_is_int(got->elem)) {
      int64_t a = ts_load_i(got->elem, got->data, k), b = ts_load_i(want->elem, want->data, k);
      ok = a == b;
      snprintf(gs, sizeof gs, "%lld", (long long)a);
      snprintf(ws, sizeof ws, "%lld", (long long)b);
    } else {
      double ar, ai, br, bi;
      ts_load_c(got->elem, got->data, k, &ar, &ai);
      ts_load_c(want->elem, want->data, k, &br, &bi);
      ok = same_float(ar, br, tol) && same_float(ai, bi, tol);
      snprintf(gs, sizeof gs, ts_elem_is_complex(got->elem) ? "(%.9g, %.9g)" : "%.9g", ar, ai);
      snprintf(ws, sizeof ws, ts_elem_is_complex(got->elem) ? "(%.9g, %.9g)" : "%.9g", br, bi);
    }
    if (!ok && bad++ < 10) fprintf(stderr, "%s: element %lld: got %s, expected %s\n", what, (long long)k, gs, ws);
  }
  if (bad) fprintf(stderr, "%s: %d of %lld elements differ\n", what, bad, (long long)n);
  return bad ? 1 : 0;
}

/* Compares a result with EXPECT-style lines; returns failures. */
static int check_result(ts_value_t *res, char **lines, int nlines, double tol, const char *who) {
  ts_array_t got[MAX_LINES];
  int n = ts_value_leaves(res, got, MAX_LINES);
  if (n != nlines) {
    fprintf(stderr, "%s: the result has %d leaves, the file expects %d\n", who, n, nlines);
    return 1;
  }
  int fails = 0;
  for (int k = 0; k < n; k++) {
    ts_hlo_module_t *lm = NULL;
    ts_value_t *want = NULL;
    if (parse_value(lines[k], &lm, &want) != TS_OK) {
      fails++;
    } else {
      char what[64];
      snprintf(what, sizeof what, "%s leaf %d", who, k);
      fails += compare(&got[k], &want->a, tol, what);
    }
    ts_value_unref(want);
    ts_hlo_module_destroy(lm);
  }
  return fails;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_interp_golden FILE.hlo\n");
    return 2;
  }
  char *text;
  size_t len;
  ts_diag_t dg = {0};
  if (ts_read_file(argv[1], &text, &len, &dg) != TS_OK) {
    fprintf(stderr, "%s", dg.text);
    return 2;
  }
  golden_t g = {0};
  scan(text, &g);
  if (!g.error && g.nexpect == 0 && g.ndexpect == 0) {
    fprintf(stderr, "%s: no EXPECT or ERROR line: a golden test must check something\n", argv[1]);
    return 2;
  }
  ts_source_t src = {argv[1], text, len};
  ts_hlo_module_t *m = NULL;
  ts_interp_t *it = NULL;
  ts_hlo_module_t *pm[MAX_LINES] = {0};
  ts_value_t *params[MAX_LINES] = {0}, *outs[1024] = {0};
  int fails = 0, nouts = 0;
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &dg);
  ts_hlo_verify_opts_t vo = {0};
  if (g.ndevices > 0) vo.num_partitions = g.ndevices;
  if (st == TS_OK) st = ts_hlo_verify(m, &vo, &dg);
  if (st != TS_OK) {
    /* A golden file must be valid HLO; ERROR lines check run-time errors. */
    fprintf(stderr, "%s", dg.text ? dg.text : "parse/verify failed\n");
    fails++;
    goto done;
  }
  ts_interp_opts_t io = {.ndevices = g.ndevices, .num_partitions = g.num_partitions};
  st = ts_interp_create(m, &io, &it, &dg);
  int ndev = it ? ts_interp_ndevices(it) : 0;
  if (st == TS_OK && g.nparam != m->entry->nparams) {
    fprintf(stderr, "%s: %d PARAM lines for %d parameters\n", argv[1], g.nparam, m->entry->nparams);
    fails++;
    goto done;
  }
  for (int k = 0; k < g.nparam && st == TS_OK; k++)
    if (parse_value(g.param[k], &pm[k], &params[k]) != TS_OK) {
      fails++;
      goto done;
    }
  ts_value_t **args = NULL;
  if (st == TS_OK) {
    /* Every device gets the same PARAM values. */
    args = calloc((size_t)(ndev * g.nparam) + 1, sizeof *args);
    for (int d = 0; d < ndev; d++)
      for (int k = 0; k < g.nparam; k++) args[d * g.nparam + k] = params[k];
    st = ts_interp_run(it, args, outs, &dg);
    free(args);
    if (st == TS_OK) nouts = ndev;
  }
  if (g.error) {
    if (st == TS_OK) {
      fprintf(stderr, "%s: expected an error containing '%s', but the run succeeded\n", argv[1], g.error);
      fails++;
    } else if (!dg.text || !strstr(dg.text, g.error)) {
      fprintf(stderr, "%s: expected an error containing '%s', got:\n%s\n", argv[1], g.error,
              dg.text ? dg.text : "(no message)");
      fails++;
    }
    goto done;
  }
  if (st != TS_OK) {
    fprintf(stderr, "%s: run failed (%s):\n%s\n", argv[1], ts_status_string(st), dg.text ? dg.text : "");
    fails++;
    goto done;
  }
  for (int d = 0; d < nouts; d++) {
    char who[32];
    snprintf(who, sizeof who, "device %d", d);
    char *lines[MAX_LINES];
    int n = 0;
    for (int k = 0; k < g.ndexpect; k++)
      if (g.ddev[k] == d) lines[n++] = g.dexpect[k];
    if (n == 0) {
      for (int k = 0; k < g.nexpect; k++) lines[k] = g.expect[k];
      n = g.nexpect;
    }
    fails += check_result(outs[d], lines, n, g.tol, who);
  }
done:
  for (int d = 0; d < nouts; d++) ts_value_unref(outs[d]);
  for (int k = 0; k < MAX_LINES; k++) {
    ts_value_unref(params[k]);
    ts_hlo_module_destroy(pm[k]);
    free(g.expect[k]);
    free(g.param[k]);
    free(g.dexpect[k]);
  }
  free(g.error);
  ts_interp_destroy(it);
  ts_interp_release_buffers();
  ts_hlo_module_destroy(m);
  ts_diag_free(&dg);
  ts_free(text);
  if (fails) {
    fprintf(stderr, "FAILED: %s\n", argv[1]);
    return 1;
  }
  printf("ok: %s\n", argv[1]);
  return 0;
}
