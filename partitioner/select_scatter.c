/* select-and-scatter along tiled dims: not handled yet (the caller falls
 * back to gathering the operands). */
#include "partitioner_internal.h"

bool ts_part_select_and_scatter(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  (void)p;
  (void)i;
  (void)s;
  return false;
}
