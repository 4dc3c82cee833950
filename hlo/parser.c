/* placeholder until the parser lands */
#include "ts_hlo.h"
ts_status_t ts_hlo_parse(const ts_source_t *src, const ts_hlo_parse_opts_t *opts,
                         ts_hlo_module_t **out, ts_diag_t *diag) {
  (void)opts; *out = NULL; ts_diag_error(diag, src, (ts_loc_t){1, 1}, "parser not implemented");
  return TS_ERR_PARSE;
}
