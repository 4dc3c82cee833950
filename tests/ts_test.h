/* What every C unit test shares: EXPECT counts a failure, prints where it
 * is, and lets the test go on; main returns non-zero when failures > 0.
 * EXPECT_EQ and EXPECT_STREQ print what they got and what they wanted.
 * A program split into files by scenario group runs them through
 * ts_test_main, a one-file program its scenarios through ts_test_cases (one
 * by name, or all). */
#ifndef TS_TEST_H
#define TS_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                      \
    }                                                                  \
  } while (0)

/* got == want for integer and enum values (compared as int64_t) and, when
 * either side is floating-point, as doubles (exactly); each side is
 * evaluated once. Not for pointers or strings (EXPECT_STREQ). */
static inline void ts_expect_eq_i64(int64_t got, int64_t want, const char *g, const char *w, const char *file,
                                    int line) {
  if (got == want) return;
  fprintf(stderr, "%s:%d: FAIL: %s == %s\n  got:  %lld\n  want: %lld\n", file, line, g, w, (long long)got,
          (long long)want);
  failures++;
}
static inline void ts_expect_eq_f64(double got, double want, const char *g, const char *w, const char *file,
                                    int line) {
  if (got == want) return;
  fprintf(stderr, "%s:%d: FAIL: %s == %s\n  got:  %.17g\n  want: %.17g\n", file, line, g, w, got, want);
  failures++;
}
#define EXPECT_EQ(got, want)                                                                       \
  _Generic((got) + (want), float: ts_expect_eq_f64, double: ts_expect_eq_f64, long double: ts_expect_eq_f64, \
           default: ts_expect_eq_i64)((got), (want), #got, #want, __FILE__, __LINE__)

/* Two strings equal (NULL equals only NULL). */
static inline void ts_expect_streq(const char *got, const char *want, const char *g, const char *w,
                                   const char *file, int line) {
  if (got == want || (got && want && strcmp(got, want) == 0)) return;
  fprintf(stderr, "%s:%d: FAIL: %s equals %s\n  got:  %s%s%s\n  want: %s%s%s\n", file, line, g, w,
          got ? "\"" : "", got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
          want ? "\"" : "");
  failures++;
}
#define EXPECT_STREQ(got, want) ts_expect_streq((got), (want), #got, #want, __FILE__, __LINE__)

/* ---- programs made of scenario groups ----------------------------------- */

/* One scenario group of a program (a file of it, or one function): runs its
 * scenarios and returns how many of its checks failed. */
typedef struct {
  const char *name;
  int (*run)(void);
} ts_test_group_t;

/* Runs the group named by argv[1], or every group when there is none; exit
 * status 0 when nothing failed, 1 when something did, 2 for an unknown name. */
static inline int ts_test_main(const char *prog, int argc, char **argv, const ts_test_group_t *groups, int n) {
  int failed = 0, ran = 0;
  for (int k = 0; k < n; k++) {
    if (argc > 1 && strcmp(argv[1], groups[k].name) != 0) continue;
    failed += groups[k].run();
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "%s: no group '%s'; groups:", prog, argv[1]);
    for (int k = 0; k < n; k++) fprintf(stderr, " %s", groups[k].name);
    fprintf(stderr, "\n");
    return 2;
  }
  if (failed) fprintf(stderr, "%s: %d failure(s)\n", prog, failed);
  return failed ? 1 : 0;
}

/* ---- programs made of scenarios in one file ----------------------------- */

typedef struct {
  const char *name;
  void (*run)(void);
} ts_test_case_t;

/* Runs the scenario named by argv[1], or every one when there is none; exit
 * status as ts_test_main's. */
static inline int ts_test_cases(const char *prog, int argc, char **argv, const ts_test_case_t *cases, int n) {
  int ran = 0;
  for (int k = 0; k < n; k++) {
    if (argc > 1 && strcmp(argv[1], cases[k].name) != 0) continue;
    cases[k].run();
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "%s: no scenario '%s'; scenarios:", prog, argv[1]);
    for (int k = 0; k < n; k++) fprintf(stderr, " %s", cases[k].name);
    fprintf(stderr, "\n");
    return 2;
  }
  if (failures) fprintf(stderr, "%s: %d failure(s)\n", prog, failures);
  return failures ? 1 : 0;
}

#endif
