/* tessera perf-table: not written yet. */
#include "ts_launcher.h"

#include <stdio.h>

int ts_cmd_perf_table(int argc, char **argv) {
  fprintf(stderr, "tessera perf-table: error: not implemented yet\n");
  return 3;
}
