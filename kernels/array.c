/* Array views, element access, the kernel context's services, constants
 * (literals written into arrays) and the reducer recognizer the fast paths
 * share. */
#include "kernels_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int64_t ts_array_count(const ts_array_t *a) {
  int64_t n = 1;
  for (int d = 0; d < a->rank; d++) n *= a->dims[d];
  return n;
}

size_t ts_array_bytes(const ts_array_t *a) {
  return (size_t)ts_array_count(a) * (size_t)ts_elem_storage_bytes(a->elem);
}

/* ---- element access ----------------------------------------------------- */

double ts_load_f(ts_elem_t e, const void *p, int64_t i) {
  switch (e) {
  case TS_F32: return ((const float *)p)[i];
  case TS_F64: return ((const double *)p)[i];
  case TS_S32: return ((const int32_t *)p)[i];
  case TS_S64: return (double)((const int64_t *)p)[i];
  case TS_C64: return ((const float *)p)[2 * i];
  case TS_C128: return ((const double *)p)[2 * i];
  default: {
    double d = 0;
    size_t sz = (size_t)ts_elem_storage_bytes(e);
    ts_elem_convert(e, (const char *)p + (size_t)i * sz, TS_F64, &d, 1);
    return d;
  }
  }
}

int64_t ts_load_i(ts_elem_t e, const void *p, int64_t i) {
  switch (e) {
  case TS_S32: return ((const int32_t *)p)[i];
  case TS_S64: return ((const int64_t *)p)[i];
  case TS_U32: return ((const uint32_t *)p)[i];
  case TS_U8: case TS_PRED: return ((const uint8_t *)p)[i];
  case TS_S8: return ((const int8_t *)p)[i];
  default: {
    int64_t v = 0;
    size_t sz = (size_t)ts_elem_storage_bytes(e);
    ts_elem_convert(e, (const char *)p + (size_t)i * sz, TS_S64, &v, 1);
    return v;
  }
  }
}

void ts_store_f(ts_elem_t e, void *p, int64_t i, double v) {
  switch (e) {
  case TS_F32: ((float *)p)[i] = (float)v; return;
  case TS_F64: ((double *)p)[i] = v; return;
  case TS_C64: ((float *)p)[2 * i] = (float)v; ((float *)p)[2 * i + 1] = 0; return;
  case TS_C128: ((double *)p)[2 * i] = v; ((double *)p)[2 * i + 1] = 0; return;
  default: {
    size_t sz = (size_t)ts_elem_storage_bytes(e);
    ts_elem_convert(TS_F64, &v, e, (char *)p + (size_t)i * sz, 1);
    return;
  }
  }
}

void ts_store_i(ts_elem_t e, void *p, int64_t i, int64_t v) {
  switch (e) {
  case TS_S32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; return;
  case TS_S64: ((int64_t *)p)[i] = v; return;
  case TS_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
  case TS_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
  case TS_PRED: ((uint8_t *)p)[i] = v != 0; return;
  default: {
    size_t sz = (size_t)ts_elem_storage_bytes(e);
    ts_elem_convert(TS_S64, &v, e, (char *)p + (size_t)i * sz, 1);
    return;
  }
  }
}

void ts_load_c(ts_elem_t e, const void *p, int64_t i, double *re, double *im) {
  if (e == TS_C64) {
    *re = ((const float *)p)[2 * i];
    *im = ((const float *)p)[2 * i + 1];
  } else if (e == TS_C128) {
    *re = ((const double *)p)[2 * i];
    *im = ((const double *)p)[2 * i + 1];
  } else {
    *re = ts_load_f(e, p, i);
    *im = 0;
  }
}

void ts_store_c(ts_elem_t e, void *p, int64_t i, double re, double im) {
  if (e == TS_C64) {
    ((float *)p)[2 * i] = (float)re;
    ((float *)p)[2 * i + 1] = (float)im;
  } else if (e == TS_C128) {
    ((double *)p)[2 * i] = re;
    ((double *)p)[2 * i + 1] = im;
  } else {
    ts_store_f(e, p, i, re);
  }
}

/* ---- constants ---------------------------------------------------------- */

ts_status_t ts_kernel_literal(const ts_literal_t *lit, ts_array_t *out) {
  if (lit->elided || !ts_elem_is_array(out->elem)) return TS_OK; /* zeros */
  int64_t n = ts_array_count(out);
  if (lit->count != n) return TS_ERR_INVALID_ARGUMENT;
  ts_elem_t e = out->elem;
  if (ts_elem_is_complex(e)) {
    for (int64_t k = 0; k < n; k++) ts_store_c(e, out->data, k, lit->f[2 * k], lit->f[2 * k + 1]);
  } else if (lit->f) {
    for (int64_t k = 0; k < n; k++) ts_store_f(e, out->data, k, lit->f[k]);
  } else if (lit->i) {
    for (int64_t k = 0; k < n; k++) ts_store_i(e, out->data, k, lit->i[k]);
  }
  return TS_OK;
}

/* ---- kernel context ----------------------------------------------------- */

void *ts_kernel_scratch(ts_kernel_ctx_t *ctx, size_t bytes) {
  if (bytes > ctx->scratch_cap) {
    void *p = ts_realloc(ctx->scratch, bytes);
    if (!p) return NULL;
    ctx->scratch = p;
    ctx->scratch_cap = bytes;
  }
  return ctx->scratch;
}

void ts_kernel_ctx_free(ts_kernel_ctx_t *ctx) {
  ts_free(ctx->scratch);
  ctx->scratch = NULL;
  ctx->scratch_cap = 0;
}

ts_status_t ts_kernel_fail(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_status_t st,
                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = ts_kernel_vfail(ctx, instr, st, fmt, ap);
  va_end(ap);
  return st;
}

ts_status_t ts_kernel_vfail(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_status_t st,
                            const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (ctx->source && ctx->source->text && instr->loc.line > 0)
    ts_diag_error(ctx->diag, ctx->source, instr->loc, "%s %%%s: %s", ts_opcode_name(instr->op),
                  instr->name, msg);
  else
    ts_diag_plain(ctx->diag, "%s %%%s: %s", ts_opcode_name(instr->op), instr->name, msg);
  return st;
}

/* ---- reducers ----------------------------------------------------------- */

ts_opcode_t ts_reducer_op(const ts_hlo_comp_t *comp) {
  if (!comp || comp->nparams != 2 || !comp->root) return TS_OP_COUNT;
  const ts_hlo_instr_t *r = comp->root;
  if (r->nops != 2 || !ts_shape_is_array(r->shape) || r->shape->rank != 0) return TS_OP_COUNT;
  bool direct = r->ops[0] == comp->params[0] && r->ops[1] == comp->params[1];
  bool swapped = r->ops[0] == comp->params[1] && r->ops[1] == comp->params[0];
  if (!direct && !swapped) return TS_OP_COUNT;
  switch (r->op) {
  case TS_OP_ADD: case TS_OP_MULTIPLY: case TS_OP_MAXIMUM: case TS_OP_MINIMUM:
  case TS_OP_AND: case TS_OP_OR: case TS_OP_XOR:
    return r->op;
  default: return TS_OP_COUNT;
  }
}
