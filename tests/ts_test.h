/* What every C unit test shares: EXPECT counts a failure, prints where it
 * is, and lets the test go on; main returns non-zero when failures > 0. */
#ifndef TS_TEST_H
#define TS_TEST_H

#include <stdio.h>

static int failures;

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                      \
    }                                                                  \
  } while (0)

#endif
