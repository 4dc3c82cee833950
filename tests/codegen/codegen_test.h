/* What the codegen/ tests share: a module from HLO text, and the ULP that
 * compiled math is measured in. */
#ifndef TS_CODEGEN_TEST_H
#define TS_CODEGEN_TEST_H

#include "ts_hlo.h"

#include "ts_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* HLO module text, parsed (name: the source's name in messages); NULL, with
 * a failed expectation and the parser's message, when it does not parse.
 * The caller destroys it. */
static inline ts_hlo_module_t *parse_text(const char *name, const char *text) {
  ts_source_t src = {name, text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
  if (!m) fprintf(stderr, "%s", d.text ? d.text : "");
  ts_diag_free(&d);
  return m;
}

/* One unit in the last place of f32 y: 2^(e-24) for y in [2^(e-1), 2^e),
 * 2^-149 (the subnormal quantum) below 2^-126. */
static inline double ulp_of(float y) {
  float a = fabsf(y);
  if (a < 1.17549435e-38f) return ldexp(1.0, -149);
  int e;
  frexpf(a, &e);
  return ldexp(1.0, e - 24);
}

#endif
