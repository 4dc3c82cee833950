/* runtime/compare.c: the comparison's tolerances (per type, the absolute
 * floor near zero, an explicit tolerance, exact integers) on hand-made
 * values, and the static counts on a module small enough to count by hand. */
#include "ts_interp.h"
#include "ts_sharding.h"
#include "ts_test.h"

#include <string.h>

static ts_hlo_module_t *parse(const char *text) {
  ts_source_t src = {"test", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t diag = {0};
  if (ts_hlo_parse(&src, NULL, &m, &diag) != TS_OK || ts_hlo_verify(m, NULL, &diag) != TS_OK) {
    fprintf(stderr, "%s", diag.text ? diag.text : "cannot parse\n");
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&diag);
  return m;
}

/* want and got: (f32[4], bf16[2], s32[2]) with leaf k's elements. */
typedef struct {
  double f[4], b[2];
  int64_t s[2];
} vals_t;

static ts_value_t *make(const ts_hlo_module_t *m, const vals_t *v) {
  ts_value_t *x = ts_value_new(m->entry->root->shape);
  ts_array_t l[3];
  ts_value_leaves(x, l, 3);
  for (int i = 0; i < 4; i++) ts_store_f(l[0].elem, l[0].data, i, v->f[i]);
  for (int i = 0; i < 2; i++) ts_store_f(l[1].elem, l[1].data, i, v->b[i]);
  for (int i = 0; i < 2; i++) ts_store_i(l[2].elem, l[2].data, i, v->s[i]);
  return x;
}

/* Mismatching leaves of got against want, on one device. */
static int bad_leaves(ts_hlo_module_t *m, const vals_t *want, const vals_t *got, double tolerance) {
  ts_value_t *w = make(m, want), *g = make(m, got);
  ts_sharding_value_t *rep;
  ts_status_t st = ts_sharding_simple(m->arena, TS_SHARD_REPLICATED, &rep);
  EXPECT(st == TS_OK);
  int bad = ts_interp_compare_outputs(m, w, g, rep, &g, 1, tolerance, &st);
  EXPECT(st == TS_OK);
  ts_value_unref(w);
  ts_value_unref(g);
  return bad;
}

static void test_tolerances(void) {
  ts_hlo_module_t *m = parse("HloModule t\n"
                             "ENTRY e {\n"
                             "  a = f32[4] parameter(0)\n"
                             "  b = bf16[2] parameter(1)\n"
                             "  c = s32[2] parameter(2)\n"
                             "  ROOT t = (f32[4], bf16[2], s32[2]) tuple(a, b, c)\n"
                             "}\n");
  EXPECT(m != NULL);
  if (!m) return;
  const vals_t want = {{1000, 0, 3, -4}, {1, 2}, {5, -7}};
  vals_t got = want;
  EXPECT(bad_leaves(m, &want, &got, 0) == 0);
  /* f32: rtol 1e-5 of |want| = 1000. */
  got.f[0] = 1000 * (1 + 2e-5);
  EXPECT(bad_leaves(m, &want, &got, 0) == 1);
  got.f[0] = 1000 * (1 + 5e-6);
  EXPECT(bad_leaves(m, &want, &got, 0) == 0);
  /* An explicit tolerance replaces the per-type one. */
  got.f[0] = 1000 * (1 + 2e-5);
  EXPECT(bad_leaves(m, &want, &got, 1e-3) == 0);
  got = want;
  /* Near zero the floor F = max(S, 1) / 16 = 62.5 counts: 1e-4 off is
   * 1.6e-6 relative to it, within 1e-5; 1e-3 off is 1.6e-5, not. */
  got.f[1] = 1e-4;
  EXPECT(bad_leaves(m, &want, &got, 0) == 0);
  got.f[1] = 1e-3;
  EXPECT(bad_leaves(m, &want, &got, 0) == 1);
  got = want;
  /* bf16: 4 ulps, 2^-5: 1 + 2^-6 matches, 1 + 2^-4 does not. */
  got.b[0] = 1 + 1.0 / 64;
  EXPECT(bad_leaves(m, &want, &got, 0) == 0);
  got.b[0] = 1 + 1.0 / 16;
  EXPECT(bad_leaves(m, &want, &got, 0) == 1);
  /* Integers are exact, whatever the tolerance. */
  got = want;
  got.s[1] = -6;
  EXPECT(bad_leaves(m, &want, &got, 0.5) == 1);
  /* Every leaf off: three mismatches. */
  got.f[3] = 4;
  got.b[1] = -2;
  EXPECT(bad_leaves(m, &want, &got, 0) == 3);
  ts_hlo_module_destroy(m);
}

static void test_static_counts(void) {
  ts_hlo_module_t *m = parse("HloModule c, replica_count=2\n"
                             "add {\n"
                             "  x = f32[] parameter(0)\n"
                             "  y = f32[] parameter(1)\n"
                             "  ROOT s = f32[] add(x, y)\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  p = f32[8] parameter(0)\n"
                             "  r = f32[8] all-reduce(p), replica_groups={}, to_apply=add\n"
                             "  ROOT g = f32[16] all-gather(r), dimensions={0}, replica_groups={}\n"
                             "}\n");
  EXPECT(m != NULL);
  if (!m) return;
  ts_interp_coll_stats_t cs;
  ts_interp_count_collectives(m, &cs);
  EXPECT(cs.count[0] == 1 && cs.bytes[0] == 32); /* all-reduce: 8 floats */
  EXPECT(cs.count[1] == 1 && cs.bytes[1] == 64); /* all-gather: the larger side, its result */
  /* parameter p (32) + s (4) + r (32) + g (64); parameters x, y not counted twice */
  EXPECT(ts_interp_memory_bound(m) == 132);
  ts_hlo_module_destroy(m);
}

int main(void) {
  test_tolerances();
  test_static_counts();
  ts_interp_release_buffers();
  return failures != 0;
}
