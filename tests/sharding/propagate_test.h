/* What the propagation unit tests share: a module parsed, verified,
 * propagated and verified again, and a check of the shardings named
 * instructions end with, which prints what it got. */
#ifndef TS_PROPAGATE_TEST_H
#define TS_PROPAGATE_TEST_H

#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>

/* The f32 sum a reduce or scatter applies (to_apply=sum): parameters x and y, root s. */
#define SUM_F32                  \
  "sum {\n"                      \
  "  x = f32[] parameter(0)\n"   \
  "  y = f32[] parameter(1)\n"   \
  "  ROOT s = f32[] add(x, y)\n" \
  "}\n"

/* Parses, verifies, propagates and verifies again; NULL (and a failure)
 * when any step fails. */
static inline ts_hlo_module_t *run_at(const char *text, ts_sharding_propagate_stats_t *stats, const char *file, int line) {
  ts_source_t src = {"<test>", text, strlen(text)};
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  ts_sharding_propagate_opts_t opts = {.stats = stats};
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st == TS_OK) st = ts_sharding_propagate(m, &opts, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s\n%s", file, line, ts_status_string(st), d.text ? d.text : "");
    failures++;
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&d);
  return m;
}
static inline const ts_hlo_instr_t *find(const ts_hlo_module_t *m, const char *name) {
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_instr_t *i = ts_hlo_comp_find_instr(m->comps[c], name);
    if (i) return i;
  }
  return NULL;
}

static inline void expect_sharding_at(const ts_hlo_module_t *m, const char *name, const char *want, const char *file, int line) {
  if (!m) return;
  const ts_hlo_instr_t *i = find(m, name);
  ts_buf_t b = {0};
  if (i && i->sharding) ts_sharding_print(&b, i->sharding);
  if (!i || !b.data || strcmp(b.data, want) != 0) {
    fprintf(stderr, "%s:%d: FAIL: %s: got %s want %s\n", file, line, name,
            !i ? "(no such instruction)" : b.data ? b.data : "(none)", want);
    failures++;
  }
  ts_buf_free(&b);
}

/* One instruction's expected sharding, as ts_sharding_print writes it. */
typedef struct {
  const char *name, *want;
} want_sharding_t;

/* Propagates `text` (stats: NULL, or filled) and checks every sharding of
 * want[], which ends with a NULL name. */
static inline void expect_propagation_at(const char *text, ts_sharding_propagate_stats_t *stats,
                                         const want_sharding_t *want, const char *file, int line) {
  ts_hlo_module_t *m = run_at(text, stats, file, line);
  for (const want_sharding_t *w = want; m && w->name; w++) expect_sharding_at(m, w->name, w->want, file, line);
  ts_hlo_module_destroy(m);
}
/* EXPECT_PROPAGATION(text, {"name", "{sharding}"}, ...) */
#define EXPECT_PROPAGATION(text, ...) EXPECT_PROPAGATION_STATS(text, NULL, __VA_ARGS__)
#define EXPECT_PROPAGATION_STATS(text, stats, ...) \
  expect_propagation_at(text, stats, (const want_sharding_t[]){__VA_ARGS__, {NULL, NULL}}, __FILE__, __LINE__)

#endif
