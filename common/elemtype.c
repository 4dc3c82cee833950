/* The element-type table (elemtypes.def): names, bit widths, classes. */
#include "ts_elem.h"

#include <string.h>

static const struct { const char *name; int bits; } elem_info[] = {
#define X(e, s, bits) {s, bits},
#include "elemtypes.def"
#undef X
};

const char *ts_elem_name(ts_elem_t t) { return t < TS_ELEM_COUNT ? elem_info[t].name : "?"; }
int ts_elem_bits(ts_elem_t t) { return t < TS_ELEM_COUNT ? elem_info[t].bits : 0; }
bool ts_elem_is_array(ts_elem_t t) { return t != TS_TUPLE && t != TS_TOKEN && t != TS_OPAQUE; }
bool ts_elem_is_complex(ts_elem_t t) { return t == TS_C64 || t == TS_C128; }
bool ts_elem_is_signed_int(ts_elem_t t) { return t >= TS_S1 && t <= TS_S64; }
bool ts_elem_is_unsigned_int(ts_elem_t t) { return t >= TS_U1 && t <= TS_U64; }
bool ts_elem_is_float(ts_elem_t t) {
  return (t >= TS_F16 && t <= TS_F64) || (t >= TS_F8E5M2 && t <= TS_F6E3M2FN);
}

bool ts_elem_from_name(const char *s, size_t n, ts_elem_t *out) {
  for (int t = 0; t < TS_ELEM_COUNT; t++) {
    if (t == TS_TUPLE) continue; /* `tuple` is not a type token */
    if (strlen(elem_info[t].name) == n && memcmp(elem_info[t].name, s, n) == 0) {
      *out = (ts_elem_t)t;
      return true;
    }
  }
  return false;
}
