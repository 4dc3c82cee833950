/* The monotonic clock the passes time their stages with. */
#include "ts_common.h"

#include <time.h>

double ts_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
