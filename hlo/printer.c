/* The HLO printer: canonical HLO text. Every name prints with '%', operands
 * print untyped, and attributes print in the order the module stores them,
 * so parse -> print -> parse -> print is a fixed point. */
#include "ts_hlo.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scalars ---- */

/* Shortest decimal text that reads back as the same double. */
static void put_double(ts_buf_t *b, double v) {
  if (isnan(v)) {
    /* The default quiet NaN prints bare; any other payload as nan(0x...). */
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t payload = bits & ((UINT64_C(1) << 52) - 1);
    ts_buf_puts(b, signbit(v) ? "-nan" : "nan");
    if (payload != UINT64_C(1) << 51) ts_buf_printf(b, "(0x%llx)", (unsigned long long)payload);
    return;
  }
  if (isinf(v)) {
    ts_buf_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char s[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    if (strtod(s, NULL) == v) break;
  }
  ts_buf_puts(b, s);
}

static void put_i64(ts_buf_t *b, int64_t v) {
  char s[24], *p = s + sizeof s;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  *--p = '\0';
  do *--p = (char)('0' + u % 10); while (u /= 10);
  if (v < 0) *--p = '-';
  ts_buf_puts(b, p);
}

static void put_string(ts_buf_t *b, const char *s) {
  ts_buf_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '"': ts_buf_puts(b, "\\\""); break;
    case '\\': ts_buf_puts(b, "\\\\"); break;
    case '\n': ts_buf_puts(b, "\\n"); break;
    case '\t': ts_buf_puts(b, "\\t"); break;
    case '\r': ts_buf_puts(b, "\\r"); break;
    default:
      if (c < 0x20 || c == 0x7f) /* octal: unambiguous before any next char */
        ts_buf_printf(b, "\\%03o", c);
      else
        ts_buf_putc(b, (char)c);
    }
  }
  ts_buf_putc(b, '"');
}

/* The entries of a list with `sep` between them. */
static void put_list(ts_buf_t *b, const ts_i64_list_t *l, const char *sep) {
  for (int k = 0; k < l->n; k++) {
    if (k) ts_buf_puts(b, sep);
    put_i64(b, l->v[k]);
  }
}

static void put_braced_list(ts_buf_t *b, const ts_i64_list_t *l) {
  ts_buf_putc(b, '{');
  put_list(b, l, ",");
  ts_buf_putc(b, '}');
}

/* ---- shapes ---- */

static void put_layout(ts_buf_t *b, const ts_layout_t *l) {
  ts_buf_putc(b, '{');
  for (int k = 0; k < l->rank; k++) {
    if (k) ts_buf_putc(b, ',');
    put_i64(b, l->minor_to_major[k]);
  }
  if (l->ntiles || l->element_size_bits || l->memory_space || l->other) {
    ts_buf_putc(b, ':');
    if (l->ntiles) {
      ts_buf_putc(b, 'T');
      for (int t = 0; t < l->ntiles; t++) {
        ts_buf_putc(b, '(');
        for (int k = 0; k < l->tiles[t].n; k++) {
          if (k) ts_buf_putc(b, ',');
          if (l->tiles[t].v[k] < 0)
            ts_buf_putc(b, '*');
          else
            put_i64(b, l->tiles[t].v[k]);
        }
        ts_buf_putc(b, ')');
      }
    }
    if (l->element_size_bits) ts_buf_printf(b, "E(%lld)", (long long)l->element_size_bits);
    if (l->memory_space) ts_buf_printf(b, "S(%lld)", (long long)l->memory_space);
    if (l->other) ts_buf_puts(b, l->other);
  }
  ts_buf_putc(b, '}');
}

void ts_shape_print(ts_buf_t *b, const ts_shape_t *s, bool layouts) {
  if (s->elem == TS_TUPLE) {
    ts_buf_putc(b, '(');
    for (int k = 0; k < s->ntuple; k++) {
      if (k) ts_buf_puts(b, ", ");
      ts_shape_print(b, s->tuple[k], layouts);
    }
    ts_buf_putc(b, ')');
    return;
  }
  ts_buf_puts(b, ts_elem_name(s->elem));
  ts_buf_putc(b, '[');
  for (int d = 0; d < s->rank; d++) {
    if (d) ts_buf_putc(b, ',');
    bool dyn = s->dynamic && s->dynamic[d];
    if (dyn && s->dims[d] == TS_DIM_UNBOUNDED) {
      ts_buf_putc(b, '?');
      continue;
    }
    if (dyn) ts_buf_puts(b, "<=");
    put_i64(b, s->dims[d]);
  }
  ts_buf_putc(b, ']');
  if (layouts && s->layout) put_layout(b, s->layout);
}

/* ---- literals ---- */

static void put_element(ts_buf_t *b, const ts_literal_t *lit, int64_t k) {
  ts_elem_t t = lit->shape->elem;
  if (ts_elem_is_complex(t)) {
    ts_buf_putc(b, '(');
    put_double(b, lit->f[2 * k]);
    ts_buf_puts(b, ", ");
    put_double(b, lit->f[2 * k + 1]);
    ts_buf_putc(b, ')');
  } else if (ts_elem_is_float(t)) {
    put_double(b, lit->f[k]);
  } else if (t == TS_PRED) {
    ts_buf_puts(b, lit->i[k] ? "true" : "false");
  } else if (t == TS_U64) {
    ts_buf_printf(b, "%llu", (unsigned long long)(uint64_t)lit->i[k]);
  } else {
    put_i64(b, lit->i[k]);
  }
}

/* Prints dimension `d` onwards of an array literal starting at element *k. */
static void put_array_level(ts_buf_t *b, const ts_literal_t *lit, int d, int64_t *k) {
  const ts_shape_t *s = lit->shape;
  if (d == s->rank) {
    put_element(b, lit, (*k)++);
    return;
  }
  ts_buf_putc(b, '{');
  for (int64_t j = 0; j < s->dims[d]; j++) {
    if (j) ts_buf_puts(b, ", ");
    put_array_level(b, lit, d + 1, k);
  }
  ts_buf_putc(b, '}');
}

static void put_literal(ts_buf_t *b, const ts_literal_t *lit) {
  if (lit->shape->elem == TS_TUPLE) {
    ts_buf_putc(b, '(');
    for (int k = 0; k < lit->ntuple; k++) {
      if (k) ts_buf_puts(b, ", ");
      put_literal(b, lit->tuple[k]);
    }
    ts_buf_putc(b, ')');
    return;
  }
  if (lit->elided) {
    ts_buf_puts(b, "{...}");
    return;
  }
  int64_t k = 0;
  put_array_level(b, lit, 0, &k);
}

/* The standalone form of `literal=` on custom-call: every array carries its
 * shape, `f32[2]{0} {1, 2}` or `(f32[] 1, s32[2]{0} {1, 2})`. */
static void put_standalone_literal(ts_buf_t *b, const ts_literal_t *lit) {
  if (lit->shape->elem == TS_TUPLE) {
    ts_buf_putc(b, '(');
    for (int k = 0; k < lit->ntuple; k++) {
      if (k) ts_buf_puts(b, ", ");
      put_standalone_literal(b, lit->tuple[k]);
    }
    ts_buf_putc(b, ')');
    return;
  }
  ts_shape_print(b, lit->shape, true);
  ts_buf_putc(b, ' ');
  put_literal(b, lit);
}

/* ---- shardings ---- */

static const char *subgroup_name(ts_subgroup_t g) {
  switch (g) {
  case TS_SUBGROUP_MANUAL: return "manual";
  case TS_SUBGROUP_REPLICATED: return "replicated";
  case TS_SUBGROUP_MAXIMAL: return "maximal";
  case TS_SUBGROUP_UNREDUCED: return "unreduced";
  }
  return "?";
}

void ts_sharding_print(ts_buf_t *b, const ts_sharding_t *s) {
  switch (s->kind) {
  case TS_SHARD_NAMED: ts_buf_puts(b, s->text); return;
  case TS_SHARD_TUPLE:
    ts_buf_putc(b, '{');
    for (int k = 0; k < s->ntuple; k++) {
      if (k) ts_buf_puts(b, ", ");
      ts_sharding_print(b, s->tuple[k]);
    }
    ts_buf_putc(b, '}');
    return;
  case TS_SHARD_REPLICATED: ts_buf_puts(b, "{replicated"); break;
  case TS_SHARD_MANUAL: ts_buf_puts(b, "{manual"); break;
  case TS_SHARD_UNKNOWN: ts_buf_puts(b, "{unknown"); break;
  case TS_SHARD_UNREDUCED: ts_buf_puts(b, "{unreduced"); break;
  case TS_SHARD_MAXIMAL: ts_buf_printf(b, "{maximal device=%lld", (long long)s->device); break;
  case TS_SHARD_TILED:
    ts_buf_puts(b, "{devices=[");
    put_list(b, &s->tile_dims, ",");
    ts_buf_putc(b, ']');
    if (s->iota) {
      ts_buf_puts(b, "<=[");
      put_list(b, &s->iota_reshape, ",");
      ts_buf_putc(b, ']');
      if (s->iota_perm.n) {
        ts_buf_puts(b, "T(");
        put_list(b, &s->iota_perm, ",");
        ts_buf_putc(b, ')');
      }
    } else {
      put_list(b, &s->devices, ",");
    }
    if (s->last_tile_dim_replicate) ts_buf_puts(b, " last_tile_dim_replicate");
    if (s->nsubgroups) {
      ts_buf_puts(b, " last_tile_dims={");
      for (int k = 0; k < s->nsubgroups; k++) {
        if (k) ts_buf_puts(b, ", ");
        ts_buf_puts(b, subgroup_name(s->subgroups[k]));
      }
      ts_buf_putc(b, '}');
    }
    break;
  }
  if (s->shard_group)
    ts_buf_printf(b, " %s %lld", s->shard_group == 1 ? "shard_as" : "shard_like",
                  (long long)s->shard_group_id);
  if (s->metadata) {
    ts_buf_puts(b, " metadata=");
    ts_buf_puts(b, s->metadata);
  }
  ts_buf_putc(b, '}');
}

/* ---- attribute values ---- */

/* ` stride=2x1`: one int64 field of every window dimension, `x`-joined. */
static void put_window_field(ts_buf_t *b, const char *label, const ts_window_t *w, size_t offset) {
  ts_buf_puts(b, label);
  for (int d = 0; d < w->n; d++) {
    int64_t v;
    memcpy(&v, (const char *)&w->dims[d] + offset, sizeof v);
    if (d) ts_buf_putc(b, 'x');
    put_i64(b, v);
  }
}

/* Like XLA, prints size always and every other field only when some
 * dimension differs from the default. */
static void put_window(ts_buf_t *b, const ts_window_t *w) {
  bool stride = false, pad = false, lhs = false, rhs = false, rev = false;
  for (int d = 0; d < w->n; d++) {
    const ts_window_dim_t *x = &w->dims[d];
    stride |= x->stride != 1;
    pad |= x->pad_lo != 0 || x->pad_hi != 0;
    lhs |= x->lhs_dilate != 1;
    rhs |= x->rhs_dilate != 1;
    rev |= x->reversal;
  }
  ts_buf_putc(b, '{');
  if (w->n) put_window_field(b, "size=", w, offsetof(ts_window_dim_t, size));
  if (stride) put_window_field(b, " stride=", w, offsetof(ts_window_dim_t, stride));
  if (pad) {
    ts_buf_puts(b, " pad=");
    for (int d = 0; d < w->n; d++)
      ts_buf_printf(b, "%s%lld_%lld", d ? "x" : "", (long long)w->dims[d].pad_lo,
                    (long long)w->dims[d].pad_hi);
  }
  if (lhs) put_window_field(b, " lhs_dilate=", w, offsetof(ts_window_dim_t, lhs_dilate));
  if (rhs) put_window_field(b, " rhs_dilate=", w, offsetof(ts_window_dim_t, rhs_dilate));
  if (rev) {
    ts_buf_puts(b, " rhs_reversal=");
    for (int d = 0; d < w->n; d++) {
      if (d) ts_buf_putc(b, 'x');
      ts_buf_putc(b, w->dims[d].reversal ? '1' : '0');
    }
  }
  ts_buf_putc(b, '}');
}

static void put_shape_index(ts_buf_t *b, const ts_i64_list_t *l) {
  ts_buf_putc(b, '{');
  put_list(b, l, ",");
  ts_buf_putc(b, '}');
}

static void put_attr_value(ts_buf_t *b, const ts_hlo_attr_t *a) {
  switch (a->kind) {
  case TS_ATTR_INT: put_i64(b, a->v.i); break;
  case TS_ATTR_BOOL: ts_buf_puts(b, a->v.b ? "true" : "false"); break;
  case TS_ATTR_FLOAT: put_double(b, a->v.f); break;
  case TS_ATTR_STRING: put_string(b, a->v.s); break;
  case TS_ATTR_IDENT:
  case TS_ATTR_BLOB:
  case TS_ATTR_RAW: ts_buf_puts(b, a->v.s); break;
  case TS_ATTR_CONV_DNUMS: ts_buf_puts(b, a->v.conv->text); break;
  case TS_ATTR_INT_LIST: put_braced_list(b, &a->v.list); break;
  case TS_ATTR_BOOL_LIST:
    ts_buf_putc(b, '{');
    for (int k = 0; k < a->v.list.n; k++) {
      if (k) ts_buf_putc(b, ',');
      ts_buf_puts(b, a->v.list.v[k] ? "true" : "false");
    }
    ts_buf_putc(b, '}');
    break;
  case TS_ATTR_INT_LISTS:
    ts_buf_putc(b, '{');
    for (int k = 0; k < a->v.lists.n; k++) {
      if (k) ts_buf_putc(b, ',');
      put_braced_list(b, &a->v.lists.lists[k]);
    }
    ts_buf_putc(b, '}');
    break;
  case TS_ATTR_SLICE: {
    const ts_slice_t *s = a->v.slice;
    bool strides = false; /* like XLA: every stride, or none when all are 1 */
    for (int d = 0; d < s->n; d++) strides |= s->stride[d] != 1;
    ts_buf_putc(b, '{');
    for (int d = 0; d < s->n; d++) {
      ts_buf_printf(b, "%s[%lld:%lld", d ? ", " : "", (long long)s->start[d], (long long)s->limit[d]);
      if (strides) ts_buf_printf(b, ":%lld", (long long)s->stride[d]);
      ts_buf_putc(b, ']');
    }
    ts_buf_putc(b, '}');
    break;
  }
  case TS_ATTR_PADDING: {
    const ts_padding_t *p = a->v.padding;
    bool interior = false; /* like XLA: every interior, or none when all are 0 */
    for (int d = 0; d < p->n; d++) interior |= p->interior[d] != 0;
    for (int d = 0; d < p->n; d++) {
      ts_buf_printf(b, "%s%lld_%lld", d ? "x" : "", (long long)p->lo[d], (long long)p->hi[d]);
      if (interior) ts_buf_printf(b, "_%lld", (long long)p->interior[d]);
    }
    break;
  }
  case TS_ATTR_WINDOW: put_window(b, a->v.window); break;
  case TS_ATTR_REPLICA_GROUPS: {
    const ts_replica_groups_t *rg = a->v.rg;
    if (rg->mesh) {
      ts_buf_puts(b, rg->mesh);
    } else if (rg->iota) {
      ts_buf_printf(b, "[%lld,%lld]<=[", (long long)rg->iota_groups, (long long)rg->iota_group_size);
      put_list(b, &rg->iota_reshape, ",");
      ts_buf_putc(b, ']');
      if (rg->iota_perm.n) {
        ts_buf_puts(b, "T(");
        put_list(b, &rg->iota_perm, ",");
        ts_buf_putc(b, ')');
      }
    } else {
      ts_buf_putc(b, '{');
      for (int k = 0; k < rg->ngroups; k++) {
        if (k) ts_buf_putc(b, ',');
        put_braced_list(b, &rg->groups[k]);
      }
      ts_buf_putc(b, '}');
    }
    break;
  }
  case TS_ATTR_COMP:
    ts_buf_putc(b, '%');
    ts_buf_puts(b, a->v.comps.comps[0]->name);
    break;
  case TS_ATTR_COMP_LIST:
    ts_buf_putc(b, '{');
    for (int k = 0; k < a->v.comps.n; k++) {
      ts_buf_puts(b, k ? ", %" : "%");
      ts_buf_puts(b, a->v.comps.comps[k]->name);
    }
    ts_buf_putc(b, '}');
    break;
  case TS_ATTR_SHAPE: ts_shape_print(b, a->v.shape, true); break;
  case TS_ATTR_SHAPE_LIST:
    ts_buf_putc(b, '{');
    for (int k = 0; k < a->v.shapes.n; k++) {
      if (k) ts_buf_puts(b, ", ");
      ts_shape_print(b, a->v.shapes.shapes[k], true);
    }
    ts_buf_putc(b, '}');
    break;
  case TS_ATTR_LITERAL: put_standalone_literal(b, a->v.literal); break;
  case TS_ATTR_LAYOUT_SIG:
    ts_buf_puts(b, "{(");
    for (int k = 0; k < a->v.sig.nparams; k++) {
      if (k) ts_buf_puts(b, ", ");
      ts_shape_print(b, a->v.sig.params[k], true);
    }
    ts_buf_puts(b, ")->");
    ts_shape_print(b, a->v.sig.result, true);
    ts_buf_putc(b, '}');
    break;
  case TS_ATTR_ALIASES:
    ts_buf_puts(b, "{ ");
    for (int k = 0; k < a->v.aliases.n; k++) {
      const ts_alias_t *al = &a->v.aliases.v[k];
      if (k) ts_buf_puts(b, ", ");
      put_shape_index(b, &al->output_index);
      ts_buf_printf(b, ": (%lld, ", (long long)al->param_number);
      put_shape_index(b, &al->param_index);
      if (al->kind) ts_buf_puts(b, al->kind == 2 ? ", must-alias" : ", may-alias");
      ts_buf_putc(b, ')');
    }
    ts_buf_puts(b, a->v.aliases.n ? " }" : "}");
    break;
  case TS_ATTR_DONORS:
    ts_buf_puts(b, "{ ");
    for (int k = 0; k < a->v.donors.n; k++) {
      if (k) ts_buf_puts(b, ", ");
      ts_buf_printf(b, "(%lld, ", (long long)a->v.donors.v[k].param_number);
      put_shape_index(b, &a->v.donors.v[k].param_index);
      ts_buf_putc(b, ')');
    }
    ts_buf_puts(b, a->v.donors.n ? " }" : "}");
    break;
  }
}

static void put_attr(ts_buf_t *b, const ts_hlo_attr_t *a) {
  if (a->kind == TS_ATTR_WINDOW && a->v.window->n == 0) return; /* XLA leaves out a rank-0 window */
  ts_buf_puts(b, ", ");
  ts_buf_puts(b, a->name);
  ts_buf_putc(b, '=');
  put_attr_value(b, a);
}

/* ---- instructions and computations ---- */

static void put_opcode(ts_buf_t *b, const ts_hlo_instr_t *i) {
  if (i->async_wrapped != TS_OP_COUNT &&
      (i->op == TS_OP_ASYNC_START || i->op == TS_OP_ASYNC_UPDATE || i->op == TS_OP_ASYNC_DONE)) {
    ts_buf_puts(b, ts_opcode_name(i->async_wrapped));
    ts_buf_puts(b, i->op == TS_OP_ASYNC_START ? "-start" : i->op == TS_OP_ASYNC_UPDATE ? "-update" : "-done");
    return;
  }
  ts_buf_puts(b, ts_opcode_name(i->op));
}

void ts_hlo_instr_print(ts_buf_t *b, const ts_hlo_instr_t *i) {
  if (i->is_root) ts_buf_puts(b, "ROOT ");
  ts_buf_putc(b, '%');
  ts_buf_puts(b, i->name);
  ts_buf_puts(b, " = ");
  ts_shape_print(b, i->shape, true);
  ts_buf_putc(b, ' ');
  put_opcode(b, i);
  ts_buf_putc(b, '(');
  if (i->op == TS_OP_PARAMETER) {
    put_i64(b, i->param_number);
  } else if (i->op == TS_OP_CONSTANT && i->literal) {
    put_literal(b, i->literal);
  } else {
    for (int k = 0; k < i->nops; k++) {
      ts_buf_puts(b, k ? ", %" : "%");
      ts_buf_puts(b, i->ops[k]->name);
    }
  }
  ts_buf_putc(b, ')');
  for (int k = 0; k < i->nattrs; k++) put_attr(b, &i->attrs[k]);
  if (i->sharding) {
    ts_buf_puts(b, ", sharding=");
    ts_sharding_print(b, i->sharding);
  }
  if (i->nctrl_preds) {
    ts_buf_puts(b, ", control-predecessors={");
    for (int k = 0; k < i->nctrl_preds; k++) {
      ts_buf_puts(b, k ? ", %" : "%");
      ts_buf_puts(b, i->ctrl_preds[k]->name);
    }
    ts_buf_putc(b, '}');
  }
}

static void put_comp(ts_buf_t *b, const ts_hlo_comp_t *c) {
  if (c->is_entry) ts_buf_puts(b, "ENTRY ");
  ts_buf_putc(b, '%');
  ts_buf_puts(b, c->name);
  if (c->root) {
    ts_buf_puts(b, " (");
    bool first = true;
    for (int k = 0; k < c->nparams; k++) {
      const ts_hlo_instr_t *p = c->params[k];
      if (!p) continue;
      ts_buf_puts(b, first ? "" : ", ");
      first = false;
      ts_buf_puts(b, p->name);
      ts_buf_puts(b, ": ");
      ts_shape_print(b, p->shape, false);
    }
    ts_buf_puts(b, ") -> ");
    ts_shape_print(b, c->root->shape, false);
  }
  ts_buf_puts(b, " {\n");
  for (int k = 0; k < c->ninstrs; k++) {
    ts_buf_puts(b, "  ");
    ts_hlo_instr_print(b, c->instrs[k]);
    ts_buf_putc(b, '\n');
  }
  ts_buf_putc(b, '}');
  if (c->execution_thread) {
    ts_buf_puts(b, ", execution_thread=");
    put_string(b, c->execution_thread);
  }
  ts_buf_putc(b, '\n');
}

/* The stack-frame tables are kept as one verbatim module attribute that
 * prints as its own section after the header line, not as `name=value`.
 * (The parser reserves header attribute names starting with "__".) */
static bool is_section(const ts_hlo_attr_t *a) { return strcmp(a->name, "__stack_frames") == 0; }

ts_status_t ts_hlo_print(const ts_hlo_module_t *m, ts_buf_t *out) {
  ts_buf_puts(out, "HloModule ");
  ts_buf_puts(out, m->name);
  for (int k = 0; k < m->nattrs; k++)
    if (!is_section(&m->attrs[k])) put_attr(out, &m->attrs[k]);
  ts_buf_putc(out, '\n');
  for (int k = 0; k < m->nattrs; k++) {
    if (!is_section(&m->attrs[k])) continue;
    ts_buf_putc(out, '\n');
    ts_buf_puts(out, m->attrs[k].v.s);
    ts_buf_putc(out, '\n');
  }
  for (int k = 0; k < m->ncomps; k++) {
    ts_buf_putc(out, '\n');
    put_comp(out, m->comps[k]);
  }
  return out->oom ? TS_ERR_NOMEM : TS_OK;
}
