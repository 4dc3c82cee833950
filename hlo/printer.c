/* placeholder until the printer lands */
#include "ts_hlo.h"
ts_status_t ts_hlo_print(const ts_hlo_module_t *m, ts_buf_t *out) { (void)m; (void)out; return TS_OK; }
void ts_hlo_shape_print(ts_buf_t *b, const ts_shape_t *s, bool layouts) { (void)b; (void)s; (void)layouts; }
