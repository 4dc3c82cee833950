/* What the hang detector's tests share: the options of a coordinator that
 * says nothing but its digests. */
#ifndef TS_HANG_TEST_H
#define TS_HANG_TEST_H

#include <stdbool.h>

#include "ts_hang.h"

/* The defaults, for `world` workers, with `secret` and hang timeout, quiet. */
static inline ts_hang_coord_opts_t quiet_coord_opts(int world, const char *secret, double hang_timeout_s) {
  ts_hang_coord_opts_t o;
  ts_hang_coord_opts_default(&o);
  o.world = world;
  o.secret = secret;
  o.hang_timeout_s = hang_timeout_s;
  o.quiet = true;
  return o;
}

#endif
