/* tessera diagnose: not written yet. */
#include "ts_launcher.h"

#include <stdio.h>

int ts_cmd_diagnose(int argc, char **argv) {
  fprintf(stderr, "tessera diagnose: error: not implemented yet\n");
  return 3;
}
