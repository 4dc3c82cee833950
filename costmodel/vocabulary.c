/* Names of the collective kinds the model prices, transfer schemes, interpolation modes and XLA
 * primitive types, as XLA spells them. */
#include "costmodel_internal.h"

#include <string.h>

bool ts_cost_coll_from_name(const char *s, ts_coll_kind_t *out) {
  for (int i = 0; i < TS_COST_COLL_COUNT; i++) {
    const char *name = ts_coll_kind_name((ts_coll_kind_t)i);
    size_t n = strlen(name);
    /* The async forms cost what the synchronous ones do. */
    if (strncmp(s, name, n) == 0 && (s[n] == 0 || strcmp(s + n, "-start") == 0)) {
      *out = (ts_coll_kind_t)i;
      return true;
    }
  }
  return false;
}

static const char *const scheme_names[TS_SCHEME_COUNT] = {
    "non-rail-aligned", "rail-aligned", "one-way", "two-way-all-mutual", "two-way-has-non-mutual"};

const char *ts_transfer_scheme_name(ts_transfer_scheme_t s) {
  return (unsigned)s < TS_SCHEME_COUNT ? scheme_names[s] : "?";
}

bool ts_transfer_scheme_from_name(const char *s, ts_transfer_scheme_t *out) {
  for (int i = 0; i < TS_SCHEME_COUNT; i++) {
    if (strcmp(s, scheme_names[i]) == 0) {
      *out = (ts_transfer_scheme_t)i;
      return true;
    }
  }
  return false;
}

const char *ts_interp_mode_name(ts_interp_mode_t m) { return m == TS_INTERP_NEAREST ? "nearest" : "weighted"; }

const char *ts_primitive_type_name(int type) {
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&xla__primitive_type__descriptor, type);
  return v ? v->name : "?";
}

int ts_primitive_type_bits(int type) {
  switch (type) {
  case XLA__PRIMITIVE_TYPE__S4: case XLA__PRIMITIVE_TYPE__U4: return 4;
  case XLA__PRIMITIVE_TYPE__PRED: case XLA__PRIMITIVE_TYPE__S8: case XLA__PRIMITIVE_TYPE__U8:
  case XLA__PRIMITIVE_TYPE__F8E5M2: case XLA__PRIMITIVE_TYPE__F8E4M3FN: case XLA__PRIMITIVE_TYPE__F8E4M3B11FNUZ:
  case XLA__PRIMITIVE_TYPE__F8E5M2FNUZ: case XLA__PRIMITIVE_TYPE__F8E4M3FNUZ:
    return 8;
  case XLA__PRIMITIVE_TYPE__S16: case XLA__PRIMITIVE_TYPE__U16: case XLA__PRIMITIVE_TYPE__F16:
  case XLA__PRIMITIVE_TYPE__BF16:
    return 16;
  case XLA__PRIMITIVE_TYPE__S32: case XLA__PRIMITIVE_TYPE__U32: case XLA__PRIMITIVE_TYPE__F32: return 32;
  case XLA__PRIMITIVE_TYPE__S64: case XLA__PRIMITIVE_TYPE__U64: case XLA__PRIMITIVE_TYPE__F64:
  case XLA__PRIMITIVE_TYPE__C64:
    return 64;
  case XLA__PRIMITIVE_TYPE__C128: return 128;
  default: return 0;
  }
}
