/* Performance tables in XLA's format: loading (text or binary), writing,
 * merging, adding measurements, and reading entries back as measurements. */
#include "costmodel_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const ProtobufCMessageDescriptor *kind_desc(ts_perf_table_kind_t k) {
  return k == TS_PERF_TABLE_GEMM ? &xla__gemm_perf_table__descriptor
                                 : &xla__device_hlo_instruction_profiles__descriptor;
}

/* The upstream names, so XLA's tooling recognises files we write. */
static const char *kind_header(ts_perf_table_kind_t k) {
  return k == TS_PERF_TABLE_GEMM
             ? "# proto-file: xla/xla_data.proto\n# proto-message: xla.GemmPerfTable\n\n"
             : "# proto-file: xla/service/gpu/model/hlo_op_profile.proto\n"
               "# proto-message: xla.gpu.DeviceHloInstructionProfiles\n\n";
}

static ts_status_t wrap(ts_perf_table_kind_t kind, ProtobufCMessage *msg, ts_perf_table_t **out) {
  ts_perf_table_t *t = ts_calloc(1, sizeof *t);
  if (!t) {
    protobuf_c_message_free_unpacked(msg, &ts_pb_allocator);
    return TS_ERR_NOMEM;
  }
  t->kind = kind;
  t->msg = msg;
  *out = t;
  return TS_OK;
}

static void *msg_new(const ProtobufCMessageDescriptor *d) {
  ProtobufCMessage *m = ts_malloc(d->sizeof_message);
  if (m) d->message_init(m);
  return m;
}

static void msg_free(void *m) {
  if (m) protobuf_c_message_free_unpacked(m, &ts_pb_allocator);
}

ts_status_t ts_perf_table_create(ts_perf_table_kind_t kind, ts_perf_table_t **out) {
  ProtobufCMessage *m = msg_new(kind_desc(kind));
  if (!m) return TS_ERR_NOMEM;
  return wrap(kind, m, out);
}

void ts_perf_table_destroy(ts_perf_table_t *t) {
  if (!t) return;
  msg_free(t->msg);
  ts_free(t);
}

ts_perf_table_kind_t ts_perf_table_kind(const ts_perf_table_t *t) { return t->kind; }

/* ---- reading ------------------------------------------------------------ */

/* The "# proto-message: NAME" header among the leading comment lines:
 * 1 collectives, 2 GEMM, 0 none, -1 another message (reported). */
static int header_kind(const ts_source_t *src, ts_diag_t *diag) {
  const char *s = src->text, *end = src->text + src->len;
  int line = 1;
  while (s < end) {
    const char *eol = memchr(s, '\n', (size_t)(end - s));
    if (!eol) eol = end;
    const char *q = s;
    while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q < eol && *q != '#') break;
    const char *key = "proto-message:";
    const char *hit = NULL;
    for (const char *r = q; r + strlen(key) <= eol; r++)
      if (memcmp(r, key, strlen(key)) == 0) {
        hit = r + strlen(key);
        break;
      }
    if (hit) {
      while (hit < eol && *hit == ' ') hit++;
      const char *he = eol;
      while (he > hit && (he[-1] == ' ' || he[-1] == '\r')) he--;
      size_t n = (size_t)(he - hit);
      const char *coll = "DeviceHloInstructionProfiles", *gemm = "GemmPerfTable";
      if (n >= strlen(coll) && memcmp(he - strlen(coll), coll, strlen(coll)) == 0) return 1;
      if (n >= strlen(gemm) && memcmp(he - strlen(gemm), gemm, strlen(gemm)) == 0) return 2;
      ts_diag_error(diag, src, (ts_loc_t){line, (int)(hit - s) + 1},
                    "proto-message '%.*s' is not a performance table "
                    "(expected xla.gpu.DeviceHloInstructionProfiles or xla.GemmPerfTable)",
                    (int)n, hit);
      return -1;
    }
    s = eol + 1;
    line++;
  }
  return 0;
}

ts_status_t ts_perf_table_parse_text(const ts_source_t *src, ts_perf_table_t **out, ts_diag_t *diag) {
  int hk = header_kind(src, diag);
  if (hk < 0) return TS_ERR_PARSE;
  ProtobufCMessage *m = NULL;
  if (hk > 0) {
    ts_perf_table_kind_t k = hk == 2 ? TS_PERF_TABLE_GEMM : TS_PERF_TABLE_COLLECTIVES;
    TS_CHECK(ts_textpb_parse(src, kind_desc(k), &m, NULL, diag));
    return wrap(k, m, out);
  }
  /* No header: whichever message reads further is the one meant. */
  ts_diag_t d1 = {0}, d2 = {0};
  size_t off1 = 0, off2 = 0;
  ts_status_t st = ts_textpb_parse(src, kind_desc(TS_PERF_TABLE_COLLECTIVES), &m, &off1, &d1);
  if (st >= 0) {
    ts_diag_free(&d1);
    return wrap(TS_PERF_TABLE_COLLECTIVES, m, out);
  }
  ts_status_t st2 = ts_textpb_parse(src, kind_desc(TS_PERF_TABLE_GEMM), &m, &off2, &d2);
  if (st2 >= 0) {
    ts_diag_free(&d1);
    ts_diag_free(&d2);
    return wrap(TS_PERF_TABLE_GEMM, m, out);
  }
  if (st == TS_ERR_NOMEM || st2 == TS_ERR_NOMEM) st = TS_ERR_NOMEM;
  ts_diag_t *best = off2 > off1 ? &d2 : &d1;
  if (diag && best->text) {
    diag->count++;
    if (!diag->text) {
      diag->text = best->text;
      best->text = NULL;
    }
  }
  ts_diag_free(&d1);
  ts_diag_free(&d2);
  return st;
}

ts_status_t ts_perf_table_parse_binary(const char *name, const void *data, size_t len, ts_perf_table_t **out,
                                       ts_diag_t *diag) {
  /* The first tag tells the message: field 2 (0x12) of DeviceHloInstructionProfiles,
   * field 1 (0x0a) of GemmPerfTable. An empty message is an empty collective table. */
  const uint8_t *b = data;
  ts_perf_table_kind_t k = len > 0 && b[0] == 0x0a ? TS_PERF_TABLE_GEMM : TS_PERF_TABLE_COLLECTIVES;
  if (len > 0 && b[0] != 0x0a && b[0] != 0x12) {
    ts_diag_error(diag, &(ts_source_t){.name = name}, (ts_loc_t){0, 0},
                  "not a binary performance table (first byte 0x%02x; expected 0x12 for "
                  "xla.gpu.DeviceHloInstructionProfiles or 0x0a for xla.GemmPerfTable)",
                  b[0]);
    return TS_ERR_PARSE;
  }
  ProtobufCMessage *m = protobuf_c_message_unpack(kind_desc(k), &ts_pb_allocator, len, b);
  if (!m) {
    ts_diag_error(diag, &(ts_source_t){.name = name}, (ts_loc_t){0, 0},
                  "malformed binary %s (%zu bytes)", kind_desc(k)->name, len);
    return TS_ERR_PARSE;
  }
  return wrap(k, m, out);
}

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static bool is_binary_path(const char *path) { return has_suffix(path, ".pb") || has_suffix(path, ".binpb"); }

ts_status_t ts_perf_table_load(const char *path, ts_perf_table_t **out, ts_diag_t *diag) {
  char *text;
  size_t len;
  TS_CHECK(ts_read_file(path, &text, &len, diag));
  ts_status_t st;
  if (is_binary_path(path)) {
    st = ts_perf_table_parse_binary(path, text, len, out, diag);
  } else {
    ts_source_t src = {.name = path, .text = text, .len = len};
    st = ts_perf_table_parse_text(&src, out, diag);
  }
  ts_free(text);
  return st;
}

/* ---- writing ------------------------------------------------------------ */

ts_status_t ts_perf_table_to_text(const ts_perf_table_t *t, ts_buf_t *out) {
  ts_buf_puts(out, kind_header(t->kind));
  ts_textpb_print(t->msg, out);
  return out->oom ? TS_ERR_NOMEM : TS_OK;
}

ts_status_t ts_perf_table_to_binary(const ts_perf_table_t *t, uint8_t **data, size_t *len) {
  size_t n = protobuf_c_message_get_packed_size(t->msg);
  uint8_t *b = ts_malloc(n ? n : 1);
  if (!b) return TS_ERR_NOMEM;
  size_t w = protobuf_c_message_pack(t->msg, b);
  if (w != n) {
    ts_free(b);
    return TS_ERR_INTERNAL;
  }
  *data = b;
  *len = n;
  return TS_OK;
}

ts_status_t ts_perf_table_write(const ts_perf_table_t *t, const char *path, ts_diag_t *diag) {
  bool text = has_suffix(path, ".txtpb") || has_suffix(path, ".pbtxt") || has_suffix(path, ".textproto");
  if (!text && !is_binary_path(path)) {
    ts_diag_error(diag, &(ts_source_t){.name = path}, (ts_loc_t){0, 0},
                  "cannot tell the table format from the name (use .txtpb or .pbtxt for text, .pb for binary)");
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (text) {
    ts_buf_t b = {0};
    ts_status_t st = ts_perf_table_to_text(t, &b);
    if (st >= 0) st = ts_write_file_atomic(path, b.data, b.len, diag);
    ts_buf_free(&b);
    return st;
  }
  uint8_t *data;
  size_t len;
  TS_CHECK(ts_perf_table_to_binary(t, &data, &len));
  ts_status_t st = ts_write_file_atomic(path, data, len, diag);
  ts_free(data);
  return st;
}

/* ---- devices ------------------------------------------------------------- */

size_t ts_perf_table_num_devices(const ts_perf_table_t *t) {
  if (t->kind == TS_PERF_TABLE_GEMM) return ((const Xla__GemmPerfTable *)t->msg)->n_entries;
  return ((const Xla__DeviceHloInstructionProfiles *)t->msg)->n_entries;
}

const char *ts_perf_table_device(const ts_perf_table_t *t, size_t i) {
  if (i >= ts_perf_table_num_devices(t)) return NULL;
  if (t->kind == TS_PERF_TABLE_GEMM) return ((const Xla__GemmPerfTable *)t->msg)->entries[i]->key;
  return ((const Xla__DeviceHloInstructionProfiles *)t->msg)->entries[i]->key;
}

/* A map key given twice in a file: the later one wins, as in protobuf. */
static Xla__HloInstructionProfileList *coll_device(const ts_perf_table_t *t, const char *key) {
  const Xla__DeviceHloInstructionProfiles *p = (const void *)t->msg;
  for (size_t i = p->n_entries; i-- > 0;)
    if (strcmp(p->entries[i]->key, key) == 0) return p->entries[i]->value;
  return NULL;
}

static Xla__GemmPerfTableEntryValues *gemm_device(const ts_perf_table_t *t, const char *key) {
  const Xla__GemmPerfTable *g = (const void *)t->msg;
  for (size_t i = g->n_entries; i-- > 0;)
    if (strcmp(g->entries[i]->key, key) == 0) return g->entries[i]->value;
  return NULL;
}

/* Appends to a repeated field of a message we own (exact-size arrays, as
 * protobuf-c unpacks them). */
static bool push(void *arr_field, size_t *n, const void *elem, size_t es) {
  void **arr = arr_field;
  void *grown = ts_realloc(*arr, (*n + 1) * es);
  if (!grown) return false;
  *arr = grown;
  memcpy((char *)grown + *n * es, elem, es);
  (*n)++;
  return true;
}

static bool push_ptr(void *arr_field, size_t *n, void *p) { return push(arr_field, n, &p, sizeof p); }
static bool push_i64(int64_t **arr, size_t *n, int64_t v) { return push(arr, n, &v, sizeof v); }

static char *dup_str(const char *s) { return ts_strdup(s ? s : ""); }

static Xla__HloInstructionProfileList *coll_device_make(ts_perf_table_t *t, const char *key) {
  Xla__HloInstructionProfileList *l = coll_device(t, key);
  if (l) return l;
  Xla__DeviceHloInstructionProfiles *p = (void *)t->msg;
  Xla__DeviceHloInstructionProfiles__EntriesEntry *e = msg_new(&xla__device_hlo_instruction_profiles__entries_entry__descriptor);
  if (!e) return NULL;
  e->key = dup_str(key);
  e->value = msg_new(&xla__hlo_instruction_profile_list__descriptor);
  if (!e->key || !e->value || !push_ptr(&p->entries, &p->n_entries, e)) {
    msg_free(e);
    return NULL;
  }
  return e->value;
}

static Xla__GemmPerfTableEntryValues *gemm_device_make(ts_perf_table_t *t, const char *key) {
  Xla__GemmPerfTableEntryValues *v = gemm_device(t, key);
  if (v) return v;
  Xla__GemmPerfTable *g = (void *)t->msg;
  Xla__GemmPerfTable__EntriesEntry *e = msg_new(&xla__gemm_perf_table__entries_entry__descriptor);
  if (!e) return NULL;
  e->key = dup_str(key);
  e->value = msg_new(&xla__gemm_perf_table_entry_values__descriptor);
  if (!e->key || !e->value || !push_ptr(&g->entries, &g->n_entries, e)) {
    msg_free(e);
    return NULL;
  }
  return e->value;
}

/* A deep copy in our allocator: pack, then unpack. */
static void *msg_copy(const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = ts_malloc(n ? n : 1);
  if (!b) return NULL;
  protobuf_c_message_pack(m, b);
  void *c = protobuf_c_message_unpack(m->descriptor, &ts_pb_allocator, n, b);
  ts_free(b);
  return c;
}

/* ---- merging ------------------------------------------------------------- */

static ts_status_t merge_coll(ts_perf_table_t *dst, const ts_perf_table_t *src) {
  const Xla__DeviceHloInstructionProfiles *sp = (const void *)src->msg;
  for (size_t d = 0; d < sp->n_entries; d++) {
    const Xla__HloInstructionProfileList *sl = sp->entries[d]->value;
    if (!sl) continue;
    Xla__HloInstructionProfileList *dl = coll_device_make(dst, sp->entries[d]->key);
    if (!dl) return TS_ERR_NOMEM;
    if (dl->partition_size == 0) dl->partition_size = sl->partition_size;
    /* fingerprint -> index + 1; keys point at the fingerprints in dl. */
    ts_strmap_t by_fp = {0};
    ts_status_t st = TS_OK;
    for (size_t i = 0; i < dl->n_entries && st >= 0; i++) {
      const char *fp = dl->entries[i]->fingerprint;
      if (fp && *fp && !ts_strmap_put(&by_fp, fp, strlen(fp), (void *)(uintptr_t)(i + 1))) st = TS_ERR_NOMEM;
    }
    for (size_t i = 0; i < sl->n_entries && st >= 0; i++) {
      Xla__HloInstructionProfile *c = msg_copy(&sl->entries[i]->base);
      if (!c) {
        st = TS_ERR_NOMEM;
        break;
      }
      const char *fp = c->fingerprint;
      uintptr_t at = fp && *fp ? (uintptr_t)ts_strmap_get(&by_fp, fp, strlen(fp)) : 0;
      if (at) { /* the same measurement again: the newer one replaces it */
        Xla__HloInstructionProfile *old = dl->entries[at - 1];
        char *key = old->fingerprint; /* the map's key: keep it alive in c */
        old->fingerprint = c->fingerprint;
        c->fingerprint = key;
        msg_free(old);
        dl->entries[at - 1] = c;
        continue;
      }
      if (!push_ptr(&dl->entries, &dl->n_entries, c)) {
        msg_free(c);
        st = TS_ERR_NOMEM;
        break;
      }
      if (fp && *fp && !ts_strmap_put(&by_fp, fp, strlen(fp), (void *)(uintptr_t)dl->n_entries)) st = TS_ERR_NOMEM;
    }
    ts_strmap_free(&by_fp);
    TS_CHECK(st);
  }
  return TS_OK;
}

static ts_status_t gemm_set(Xla__GemmPerfTableEntryValues *v, int64_t b, int64_t m, int64_t n, int64_t k,
                            const char *dtype, int64_t flops) {
  Xla__GemmPerfTableEntry *e = NULL;
  for (size_t i = v->n_entries; i-- > 0;) {
    Xla__GemmPerfTableEntry *c = v->entries[i];
    if (c->b == b && c->m == m && c->n == n && c->k == k) {
      e = c;
      break;
    }
  }
  if (!e) {
    e = msg_new(&xla__gemm_perf_table_entry__descriptor);
    if (!e) return TS_ERR_NOMEM;
    e->b = b, e->m = m, e->n = n, e->k = k;
    if (!push_ptr(&v->entries, &v->n_entries, e)) {
      msg_free(e);
      return TS_ERR_NOMEM;
    }
  }
  for (size_t i = 0; i < e->n_flops; i++) {
    if (strcmp(e->flops[i]->key, dtype) == 0) {
      e->flops[i]->value = flops;
      return TS_OK;
    }
  }
  Xla__GemmPerfTableEntry__FlopsEntry *fe = msg_new(&xla__gemm_perf_table_entry__flops_entry__descriptor);
  if (!fe) return TS_ERR_NOMEM;
  fe->key = dup_str(dtype);
  fe->value = flops;
  if (!fe->key || !push_ptr(&e->flops, &e->n_flops, fe)) {
    msg_free(fe);
    return TS_ERR_NOMEM;
  }
  return TS_OK;
}

static ts_status_t merge_gemm(ts_perf_table_t *dst, const ts_perf_table_t *src) {
  const Xla__GemmPerfTable *sg = (const void *)src->msg;
  for (size_t d = 0; d < sg->n_entries; d++) {
    const Xla__GemmPerfTableEntryValues *sv = sg->entries[d]->value;
    if (!sv) continue;
    Xla__GemmPerfTableEntryValues *dv = gemm_device_make(dst, sg->entries[d]->key);
    if (!dv) return TS_ERR_NOMEM;
    for (size_t i = 0; i < sv->n_entries; i++) {
      const Xla__GemmPerfTableEntry *e = sv->entries[i];
      for (size_t f = 0; f < e->n_flops; f++)
        TS_CHECK(gemm_set(dv, e->b, e->m, e->n, e->k, e->flops[f]->key, e->flops[f]->value));
    }
  }
  return TS_OK;
}

ts_status_t ts_perf_table_merge(ts_perf_table_t *dst, const ts_perf_table_t *src, ts_diag_t *diag) {
  if (dst->kind != src->kind) {
    ts_diag_plain(diag, "cannot merge a %s table into a %s table",
                  src->kind == TS_PERF_TABLE_GEMM ? "GEMM" : "collective",
                  dst->kind == TS_PERF_TABLE_GEMM ? "GEMM" : "collective");
    return TS_ERR_INVALID_ARGUMENT;
  }
  return dst->kind == TS_PERF_TABLE_GEMM ? merge_gemm(dst, src) : merge_coll(dst, src);
}

/* ---- adding measurements ------------------------------------------------- */

static bool valid_group(int64_t groups, int64_t devices) {
  return groups >= 1 && devices >= 1 && devices <= (int64_t)1 << 20 && groups <= (int64_t)1 << 20;
}

/* The instruction XLA's collector profiles for this measurement (§4.2). */
static ts_status_t build_instruction(const ts_coll_measurement_t *m, Xla__HloInstructionProto **out, ts_diag_t *diag) {
  int et = m->element_type ? m->element_type : XLA__PRIMITIVE_TYPE__F32;
  int bits = ts_primitive_type_bits(et);
  bool permute = m->kind == TS_COLL_COLLECTIVE_PERMUTE;
  bool pattern = m->scheme >= TS_SCHEME_ONE_WAY;
  int64_t d = m->devices_per_group, g = permute ? 1 : m->num_groups;
  if ((unsigned)m->kind >= TS_COST_COLL_COUNT || (unsigned)m->scheme >= TS_SCHEME_COUNT || bits == 0 ||
      !valid_group(g, d) || m->tensor_bytes <= 0 || permute != pattern ||
      (permute && (d < 2 || (m->scheme != TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL && d % 2)))) {
    ts_diag_plain(diag, "invalid collective measurement: %s, scheme %s, element type %d, %" PRId64
                  " bytes, %" PRId64 " groups of %" PRId64 " devices",
                  ts_coll_kind_name(m->kind), ts_transfer_scheme_name(m->scheme), et, m->tensor_bytes, g, d);
    return TS_ERR_INVALID_ARGUMENT;
  }
  int64_t elems = m->tensor_bytes * 8 / bits;
  if (m->kind == TS_COLL_REDUCE_SCATTER) elems /= d;
  if (elems < 1) elems = 1;

  ts_status_t st = TS_ERR_NOMEM;
  Xla__HloInstructionProto *hi = msg_new(&xla__hlo_instruction_proto__descriptor);
  if (!hi) return TS_ERR_NOMEM;
  hi->name = dup_str(permute ? "collective-permute" : "_");
  hi->opcode = dup_str(ts_coll_kind_name(m->kind));
  Xla__ShapeProto *sh = hi->shape = msg_new(&xla__shape_proto__descriptor);
  hi->metadata = msg_new(&xla__op_metadata__descriptor);
  hi->frontend_attributes = msg_new(&xla__frontend_attributes__descriptor);
  hi->statistics_viz = msg_new(&xla__statistics_viz__descriptor);
  if (!hi->name || !hi->opcode || !sh || !hi->metadata || !hi->frontend_attributes || !hi->statistics_viz) goto fail;
  sh->element_type = (Xla__PrimitiveType)et;
  protobuf_c_boolean no = 0;
  sh->layout = msg_new(&xla__layout_proto__descriptor);
  if (!sh->layout || !push_i64(&sh->dimensions, &sh->n_dimensions, elems) ||
      !push_i64(&sh->layout->minor_to_major, &sh->layout->n_minor_to_major, 0) ||
      !push(&sh->is_dynamic_dimension, &sh->n_is_dynamic_dimension, &no, sizeof no))
    goto fail;
  sh->layout->tail_padding_alignment_in_elements = 1;
  if (m->kind == TS_COLL_ALL_GATHER || m->kind == TS_COLL_REDUCE_SCATTER || m->kind == TS_COLL_ALL_TO_ALL)
    if (!push_i64(&hi->dimensions, &hi->n_dimensions, 0)) goto fail;
  hi->channel_id = 1;
  bool reducer = m->kind == TS_COLL_ALL_REDUCE || m->kind == TS_COLL_REDUCE_SCATTER;
  hi->id = permute ? 4294967299 : reducer ? 4 : 1;
  if (!push_i64(&hi->operand_ids, &hi->n_operand_ids, permute ? 4294967298 : reducer ? 3 : 0)) goto fail;
  if (reducer && !push_i64(&hi->called_computation_ids, &hi->n_called_computation_ids, 2)) goto fail;
  hi->use_global_device_ids = !permute && m->kind != TS_COLL_ALL_TO_ALL;
  if (permute) {
    for (int64_t i = 0; i < d; i++) {
      int64_t s, t;
      if (m->scheme == TS_SCHEME_ONE_WAY) {
        if (i >= d / 2) break;
        s = i, t = i + d / 2;
      } else if (m->scheme == TS_SCHEME_TWO_WAY_ALL_MUTUAL) {
        s = i, t = i ^ 1;
      } else {
        s = i, t = (i + 1) % d;
      }
      Xla__SourceTarget *p = msg_new(&xla__source_target__descriptor);
      if (!p) goto fail;
      p->source = s, p->target = t;
      if (!push_ptr(&hi->source_target_pairs, &hi->n_source_target_pairs, p)) {
        msg_free(p);
        goto fail;
      }
    }
  } else {
    Xla__CollectiveDeviceListProto *cdl = hi->collective_device_list = msg_new(&xla__collective_device_list_proto__descriptor);
    if (!cdl) goto fail;
    Xla__IotaReplicaGroupListProto *io = cdl->iota_replica_group_list = msg_new(&xla__iota_replica_group_list_proto__descriptor);
    if (!io) goto fail;
    io->num_replica_groups = g;
    io->num_devices_per_group = d;
    if (m->scheme == TS_SCHEME_STRIDED && g > 1) { /* [G,D]<=[D,G]T(1,0) */
      int32_t p0 = 1, p1 = 0;
      if (!push_i64(&io->iota_reshape_dims, &io->n_iota_reshape_dims, d) ||
          !push_i64(&io->iota_reshape_dims, &io->n_iota_reshape_dims, g) ||
          !push(&io->iota_transpose_perm, &io->n_iota_transpose_perm, &p0, sizeof p0) ||
          !push(&io->iota_transpose_perm, &io->n_iota_transpose_perm, &p1, sizeof p1))
        goto fail;
    } else { /* [G,D]<=[G*D] */
      int32_t p0 = 0;
      if (!push_i64(&io->iota_reshape_dims, &io->n_iota_reshape_dims, g * d) ||
          !push(&io->iota_transpose_perm, &io->n_iota_transpose_perm, &p0, sizeof p0))
        goto fail;
    }
  }
  *out = hi;
  return TS_OK;
fail:
  msg_free(hi);
  return st;
}

ts_status_t ts_perf_table_add_collective(ts_perf_table_t *t, const char *device_key, const ts_coll_measurement_t *m,
                                         ts_diag_t *diag) {
  if (t->kind != TS_PERF_TABLE_COLLECTIVES) {
    ts_diag_plain(diag, "cannot add a collective measurement to a GEMM table");
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (m->throughput_bytes_per_sec <= 0) {
    ts_diag_plain(diag, "invalid collective measurement: throughput %" PRId64 " bytes/s", m->throughput_bytes_per_sec);
    return TS_ERR_INVALID_ARGUMENT;
  }
  Xla__HloInstructionProfile *e = msg_new(&xla__hlo_instruction_profile__descriptor);
  if (!e) return TS_ERR_NOMEM;
  ts_status_t st = build_instruction(m, &e->instruction, diag);
  if (st < 0) {
    msg_free(e);
    return st;
  }
  e->network_throughput_bytes_per_sec = m->throughput_bytes_per_sec;
  if (m->fingerprint && *m->fingerprint) {
    e->fingerprint = dup_str(m->fingerprint);
    if (!e->fingerprint) {
      msg_free(e);
      return TS_ERR_NOMEM;
    }
  }
  Xla__HloInstructionProfileList *l = coll_device_make(t, device_key);
  if (!l || !push_ptr(&l->entries, &l->n_entries, e)) {
    msg_free(e);
    return TS_ERR_NOMEM;
  }
  return TS_OK;
}

ts_status_t ts_perf_table_add_gemm(ts_perf_table_t *t, const char *device_key, const ts_gemm_measurement_t *m,
                                   ts_diag_t *diag) {
  if (t->kind != TS_PERF_TABLE_GEMM) {
    ts_diag_plain(diag, "cannot add a GEMM measurement to a collective table");
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (m->b < 1 || m->m < 1 || m->n < 1 || m->k < 1 || m->flops <= 0 || !m->dtype || !*m->dtype) {
    ts_diag_plain(diag, "invalid GEMM measurement: b=%" PRId64 " m=%" PRId64 " n=%" PRId64 " k=%" PRId64
                  " dtype '%s' flops %" PRId64, m->b, m->m, m->n, m->k, m->dtype ? m->dtype : "", m->flops);
    return TS_ERR_INVALID_ARGUMENT;
  }
  Xla__GemmPerfTableEntryValues *v = gemm_device_make(t, device_key);
  if (!v) return TS_ERR_NOMEM;
  return gemm_set(v, m->b, m->m, m->n, m->k, m->dtype, m->flops);
}

/* ---- reading entries back ------------------------------------------------ */

static ts_status_t entry_error(ts_diag_t *diag, const char *device, size_t i, const char *what) {
  ts_diag_plain(diag, "device '%s' entry %zu: %s", device, i, what);
  return TS_ERR_PARSE;
}

/* XLA's CollectivePermuteCostModelType from the pairs (reference §4.2). */
static ts_transfer_scheme_t permute_scheme(const Xla__HloInstructionProto *hi, int64_t *participants) {
  bool only_one_role = true, all_mutual = true;
  int64_t n = 0;
  for (size_t i = 0; i < hi->n_source_target_pairs; i++) {
    const Xla__SourceTarget *a = hi->source_target_pairs[i];
    bool mutual = false, src_seen_as_target = false, tgt_seen_as_source = false, src_new = true, tgt_new = true;
    for (size_t j = 0; j < hi->n_source_target_pairs; j++) {
      const Xla__SourceTarget *b = hi->source_target_pairs[j];
      if (b->source == a->target && b->target == a->source) mutual = true;
      if (b->target == a->source) src_seen_as_target = true;
      if (b->source == a->target) tgt_seen_as_source = true;
      if (j < i && (b->source == a->source || b->target == a->source)) src_new = false;
      if (j < i && (b->source == a->target || b->target == a->target)) tgt_new = false;
    }
    if (!mutual) all_mutual = false;
    if (src_seen_as_target || tgt_seen_as_source) only_one_role = false;
    n += src_new + (tgt_new && a->target != a->source);
  }
  *participants = n;
  if (only_one_role) return TS_SCHEME_ONE_WAY;
  return all_mutual ? TS_SCHEME_TWO_WAY_ALL_MUTUAL : TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL;
}

static ts_status_t decode_coll(const Xla__HloInstructionProfile *e, const char *device, size_t i,
                               ts_coll_measurement_t *m, ts_diag_t *diag) {
  const Xla__HloInstructionProto *hi = e->instruction;
  char msg[160];
  if (!hi) return entry_error(diag, device, i, "no instruction");
  memset(m, 0, sizeof *m);
  if (!ts_cost_coll_from_name(hi->opcode, &m->kind)) {
    snprintf(msg, sizeof msg, "opcode '%.60s' is not a collective the cost model knows", hi->opcode);
    return entry_error(diag, device, i, msg);
  }
  if (!hi->shape || hi->shape->n_tuple_shapes)
    return entry_error(diag, device, i, "the instruction has no array shape");
  m->element_type = hi->shape->element_type;
  int bits = ts_primitive_type_bits(m->element_type);
  if (!bits) return entry_error(diag, device, i, "the shape's element type has no size");
  int64_t elems = 1;
  for (size_t k = 0; k < hi->shape->n_dimensions; k++) {
    int64_t dim = hi->shape->dimensions[k];
    if (dim < 0 || (dim && elems > INT64_MAX / 16 / dim)) return entry_error(diag, device, i, "the shape is too large");
    elems *= dim;
  }
  if (m->kind == TS_COLL_COLLECTIVE_PERMUTE) {
    if (!hi->n_source_target_pairs) return entry_error(diag, device, i, "collective-permute without source_target_pairs");
    m->scheme = permute_scheme(hi, &m->devices_per_group);
    m->num_groups = 1;
  } else {
    const Xla__CollectiveDeviceListProto *cdl = hi->collective_device_list;
    if (cdl && cdl->iota_replica_group_list) {
      const Xla__IotaReplicaGroupListProto *io = cdl->iota_replica_group_list;
      m->num_groups = io->num_replica_groups;
      m->devices_per_group = io->num_devices_per_group;
      m->scheme = TS_SCHEME_CONTIGUOUS;
      for (size_t k = 0; k < io->n_iota_transpose_perm; k++)
        if (io->iota_transpose_perm[k] != (int32_t)k) m->scheme = TS_SCHEME_STRIDED;
    } else if (cdl && cdl->n_replica_groups) {
      m->num_groups = (int64_t)cdl->n_replica_groups;
      m->devices_per_group = (int64_t)cdl->replica_groups[0]->n_replica_ids;
      m->scheme = TS_SCHEME_CONTIGUOUS;
      for (size_t g = 0; g < cdl->n_replica_groups; g++) {
        const Xla__ReplicaGroup *rg = cdl->replica_groups[g];
        for (size_t k = 1; k < rg->n_replica_ids; k++)
          if (rg->replica_ids[k] != rg->replica_ids[k - 1] + 1) m->scheme = TS_SCHEME_STRIDED;
      }
    } else {
      return entry_error(diag, device, i, "no replica groups (iota_collective_device_list or collective_device_list)");
    }
    if (!valid_group(m->num_groups, m->devices_per_group))
      return entry_error(diag, device, i, "the replica groups are empty or implausibly large");
  }
  int64_t bytes = (elems * bits + 7) / 8;
  if (m->kind == TS_COLL_REDUCE_SCATTER) bytes *= m->devices_per_group;
  if (bytes <= 0) return entry_error(diag, device, i, "the instruction moves no bytes");
  m->tensor_bytes = bytes;
  m->throughput_bytes_per_sec = e->network_throughput_bytes_per_sec;
  if (m->throughput_bytes_per_sec <= 0) return entry_error(diag, device, i, "network_throughput_bytes_per_sec is not > 0");
  m->fingerprint = e->fingerprint;
  return TS_OK;
}

static ts_status_t no_device(const ts_perf_table_t *t, const char *device_key, ts_diag_t *diag) {
  ts_buf_t b = {0};
  for (size_t i = 0; i < ts_perf_table_num_devices(t); i++)
    ts_buf_printf(&b, "%s'%s'", i ? ", " : "", ts_perf_table_device(t, i));
  ts_diag_plain(diag, "the table has no device '%s' (it has %s)", device_key, b.data ? b.data : "none");
  ts_buf_free(&b);
  return TS_ERR_INVALID_ARGUMENT;
}

ts_status_t ts_perf_table_collectives(const ts_perf_table_t *t, const char *device_key, ts_coll_measurement_t **out,
                                      size_t *n, ts_diag_t *diag) {
  if (t->kind != TS_PERF_TABLE_COLLECTIVES) {
    ts_diag_plain(diag, "a GEMM table holds no collectives");
    return TS_ERR_INVALID_ARGUMENT;
  }
  const Xla__HloInstructionProfileList *l = coll_device(t, device_key);
  if (!l) return no_device(t, device_key, diag);
  ts_coll_measurement_t *a = ts_calloc(l->n_entries ? l->n_entries : 1, sizeof *a);
  if (!a) return TS_ERR_NOMEM;
  for (size_t i = 0; i < l->n_entries; i++) {
    ts_status_t st = decode_coll(l->entries[i], device_key, i, &a[i], diag);
    if (st < 0) {
      ts_free(a);
      return st;
    }
  }
  *out = a;
  *n = l->n_entries;
  return TS_OK;
}

ts_status_t ts_perf_table_gemms(const ts_perf_table_t *t, const char *device_key, ts_gemm_measurement_t **out,
                                size_t *n, ts_diag_t *diag) {
  if (t->kind != TS_PERF_TABLE_GEMM) {
    ts_diag_plain(diag, "a collective table holds no GEMMs");
    return TS_ERR_INVALID_ARGUMENT;
  }
  const Xla__GemmPerfTableEntryValues *v = gemm_device(t, device_key);
  if (!v) return no_device(t, device_key, diag);
  size_t total = 0;
  for (size_t i = 0; i < v->n_entries; i++) total += v->entries[i]->n_flops;
  ts_gemm_measurement_t *a = ts_calloc(total ? total : 1, sizeof *a);
  if (!a) return TS_ERR_NOMEM;
  size_t k = 0;
  for (size_t i = 0; i < v->n_entries; i++) {
    const Xla__GemmPerfTableEntry *e = v->entries[i];
    for (size_t f = 0; f < e->n_flops; f++)
      a[k++] = (ts_gemm_measurement_t){e->b, e->m, e->n, e->k, e->flops[f]->key, e->flops[f]->value};
  }
  *out = a;
  *n = total;
  return TS_OK;
}
