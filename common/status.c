/* Status strings and the CLI's exit-code contract. */
#include "ts_common.h"

#include <stdio.h>
#include <stdlib.h>

const char *ts_status_string(ts_status_t st) {
  switch (st) {
  case TS_OK: return "ok";
  case TS_INPROGRESS: return "in progress";
  case TS_ERR_INVALID_ARGUMENT: return "invalid argument";
  case TS_ERR_INVALID_USAGE: return "invalid usage";
  case TS_ERR_PARSE: return "parse error";
  case TS_ERR_VERIFY: return "verification error";
  case TS_ERR_CHECK_FAILED: return "check failed";
  case TS_ERR_UNSUPPORTED: return "not supported here";
  case TS_ERR_INTERNAL: return "internal error";
  case TS_ERR_SYSTEM: return "system error";
  case TS_ERR_NOMEM: return "out of memory";
  case TS_ERR_REMOTE: return "remote peer error";
  case TS_ERR_TIMEOUT: return "timeout";
  }
  return "unknown status";
}

int ts_status_exit_code(ts_status_t st) {
  switch (st) {
  case TS_OK:
  case TS_INPROGRESS: return 0;
  case TS_ERR_CHECK_FAILED: return 1;
  case TS_ERR_INVALID_ARGUMENT:
  case TS_ERR_INVALID_USAGE:
  case TS_ERR_PARSE:
  case TS_ERR_VERIFY: return 2;
  case TS_ERR_UNSUPPORTED: return 3;
  default: return 4;
  }
}

#ifndef NDEBUG
void ts_assert_fail(const char *cond, const char *file, int line) {
  fprintf(stderr, "%s:%d: internal error: assertion failed: %s\n", file, line, cond);
  abort();
}
#endif
