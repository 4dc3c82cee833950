/* The environment knobs (ts_env.h, env.def). */
#include "ts_env.h"

#include <stdlib.h>

static const ts_env_info_t knobs[TS_ENV_COUNT] = {
#define X(e, name, dflt, doc) {name, dflt, doc},
#include "env.def"
#undef X
};

const ts_env_info_t *ts_env_info(ts_env_t k) { return (unsigned)k < TS_ENV_COUNT ? &knobs[k] : NULL; }

const char *ts_env_get(ts_env_t k) { return (unsigned)k < TS_ENV_COUNT ? getenv(knobs[k].name) : NULL; }

int ts_env_int(ts_env_t k, int dflt) {
  const char *s = ts_env_get(k);
  if (!s || !*s) return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  return *end ? dflt : (int)v;
}

double ts_env_positive(ts_env_t k, double dflt) {
  const char *s = ts_env_get(k);
  double v = s ? atof(s) : 0;
  return v > 0 ? v : dflt;
}

void ts_env_print_help(FILE *f) {
  fprintf(f, "environment (default in brackets; none: the built-in choice):\n");
  for (int k = 0; k < TS_ENV_COUNT; k++)
    fprintf(f, "  %-30s [%s] %s\n", knobs[k].name, *knobs[k].dflt ? knobs[k].dflt : "none", knobs[k].doc);
}
