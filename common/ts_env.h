/* Tessera's environment knobs, declared in one table (env.def): every
 * TESSERA_* variable is read through ts_env_get, and `tessera --help-env`
 * prints the table. */
#ifndef TS_ENV_H
#define TS_ENV_H

#include <stdio.h>

typedef enum {
#define X(e, name, dflt, doc) TS_ENV_##e,
#include "env.def"
#undef X
  TS_ENV_COUNT
} ts_env_t;

typedef struct {
  const char *name; /* "TESSERA_COLL_TIMEOUT" */
  const char *dflt; /* the default as text; "" when unset means the built-in choice */
  const char *doc;  /* one line */
} ts_env_info_t;

const ts_env_info_t *ts_env_info(ts_env_t k);
/* The variable's value, or NULL when it is not set. The readers parse it
 * (each says what a malformed value does). */
const char *ts_env_get(ts_env_t k);
/* The value as a decimal int; `dflt` when unset, empty or not all digits. */
int ts_env_int(ts_env_t k, int dflt);
/* The value as a positive number (atof); `dflt` when unset or not > 0. */
double ts_env_positive(ts_env_t k, double dflt);
/* Prints the table: name, default, doc, one knob a line. */
void ts_env_print_help(FILE *f);

#endif
