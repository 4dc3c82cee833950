/* What the sharding/ unit tests share: a scratch arena, shapes and
 * sharding values from text, and checks that print what they got. */
#ifndef TS_SHARDING_TEST_H
#define TS_SHARDING_TEST_H

#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_arena_t *A;

/* An array shape from "8,8" ("" is a scalar). */
static inline const ts_shape_t *shp(const char *dims) {
  ts_shape_t *s = ts_arena_alloc(A, sizeof *s);
  s->elem = TS_F32;
  s->dims = ts_arena_alloc(A, sizeof(int64_t) * 16);
  for (const char *p = dims; *p;) {
    s->dims[s->rank++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  return s;
}

/* The value of sharding text on a shape ("-" for none); NULL (and a
 * failure) when it does not build. */
static inline ts_sharding_value_t *S_at(const char *text, const char *dims, const char *file, int line) {
  ts_sharding_value_t *v = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_sharding_parse(A, text, strcmp(dims, "-") ? shp(dims) : NULL, &v, &d);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s does not build (%s)\n%s", file, line, text, ts_status_string(st),
            d.text ? d.text : "");
    failures++;
  }
  ts_diag_free(&d);
  return v;
}
#define S(text, dims) S_at(text, dims, __FILE__, __LINE__)

static inline void expect_i64s_at(const int64_t *got, int64_t n, const int64_t *want, int64_t wn, const char *file, int line) {
  bool ok = got && n == wn;
  for (int64_t k = 0; ok && k < n; k++) ok = got[k] == want[k];
  if (!ok) {
    fprintf(stderr, "%s:%d: FAIL: got [", file, line);
    for (int64_t k = 0; got && k < n; k++) fprintf(stderr, "%s%lld", k ? "," : "", (long long)got[k]);
    fprintf(stderr, "] want [");
    for (int64_t k = 0; k < wn; k++) fprintf(stderr, "%s%lld", k ? "," : "", (long long)want[k]);
    fprintf(stderr, "]\n");
    failures++;
  }
}
#define L(...) ((const int64_t[]){__VA_ARGS__}), (int64_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define EXPECT_I64S(got, n, ...) expect_i64s_at(got, n, __VA_ARGS__, __FILE__, __LINE__)

static inline void expect_print_at(const ts_sharding_value_t *v, const char *want, const char *file, int line) {
  if (!v) return;
  ts_buf_t b = {0};
  ts_sharding_value_print(&b, v);
  if (!b.data || strcmp(b.data, want) != 0) {
    fprintf(stderr, "%s:%d: FAIL: printed %s, want %s\n", file, line, b.data ? b.data : "(null)", want);
    failures++;
  }
  ts_buf_free(&b);
}
#define EXPECT_PRINT(v, want) expect_print_at(v, want, __FILE__, __LINE__)

#define EXPECT_EQ_SH(x, y) EXPECT(ts_sharding_equal(x, y))
#define EXPECT_NE_SH(x, y) EXPECT(!ts_sharding_equal(x, y))

static inline ts_sharding_value_t *reshaped(const char *text, const char *from, const char *to) {
  ts_sharding_value_t *v = S(text, from), *r = NULL;
  if (!v) return NULL;
  EXPECT_EQ(ts_sharding_reshape(A, v, shp(from), shp(to), &r), TS_OK);
  return r;
}

static inline ts_reshard_t reshard(const char *from, const char *to, const char *dims) {
  ts_reshard_t r = {.kind = TS_RESHARD_OTHER};
  ts_sharding_value_t *f = S(from, dims), *t = S(to, dims);
  EXPECT(f && t && ts_sharding_reshard(A, f, t, shp(dims), &r) == TS_OK);
  return r;
}

static inline ts_sharding_value_t *sdy_at(const ts_sdy_meshes_t *ms, const char *text, const char *dims, const char *file, int line) {
  ts_sharding_value_t *v = NULL;
  const ts_shape_t *s = shp(dims);
  ts_status_t st = ts_sharding_from_sdy(A, ms, text, 1, &s, &v);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s: %s\n", file, line, text, ts_status_string(st));
    failures++;
  }
  return v;
}

#endif
