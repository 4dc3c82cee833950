/* Protobuf text format (the .txtpb/.pbtxt of XLA's tables), read and written
 * through protobuf-c descriptors, since protobuf-c has no text format of its
 * own. Covers what text format can say about proto3 messages without
 * extensions or Any: scalars, enums by name or number, strings with escapes
 * and concatenation, nested messages ({} or <>), maps as repeated entries,
 * list values ([a, b]), '#' comments and optional ',' / ';' separators. */
#include "costmodel_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocator ----------------------------------------------------------- */

static void *pb_alloc(void *data, size_t size) {
  (void)data;
  return ts_malloc(size ? size : 1);
}
static void pb_free(void *data, void *p) {
  (void)data;
  ts_free(p);
}
ProtobufCAllocator ts_pb_allocator = {pb_alloc, pb_free, NULL};

/* ---- lexer --------------------------------------------------------------- */

enum { T_EOF, T_IDENT, T_NUMBER, T_STRING, T_PUNCT };

#define MAX_DEPTH 64

typedef struct {
  const ts_source_t *src;
  const char *s;
  size_t len, pos;
  int line;
  size_t line_start;
  ts_diag_t *diag;
  size_t err_offset;
  /* the current token */
  int tok;
  size_t tstart, tlen;
  ts_loc_t tloc;
  int depth;
} parser_t;

static ts_loc_t loc_at(const parser_t *p, size_t off) {
  /* Tokens never span lines, so the current line suffices for offsets in it. */
  if (off >= p->line_start) return (ts_loc_t){p->line, (int)(off - p->line_start) + 1};
  return p->tloc;
}

static ts_status_t error_at(parser_t *p, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ts_status_t error_at(parser_t *p, size_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_loc_t loc = off == p->tstart ? p->tloc : loc_at(p, off);
  ts_diag_verror(p->diag, p->src, loc, fmt, ap);
  va_end(ap);
  p->err_offset = off;
  return TS_ERR_PARSE;
}

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Describes the current token for messages: "'foo'", "end of input". */
static const char *tok_desc(const parser_t *p, char *buf, size_t n) {
  if (p->tok == T_EOF) return "end of input";
  int l = p->tlen > 40 ? 40 : (int)p->tlen;
  snprintf(buf, n, "'%.*s%s'", l, p->s + p->tstart, p->tlen > 40 ? "..." : "");
  return buf;
}

static ts_status_t next(parser_t *p) {
  for (;;) {
    while (p->pos < p->len) {
      char c = p->s[p->pos];
      if (c == '\n') {
        p->pos++;
        p->line++;
        p->line_start = p->pos;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        p->pos++;
      } else {
        break;
      }
    }
    if (p->pos < p->len && p->s[p->pos] == '#') {
      while (p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
      continue;
    }
    break;
  }
  p->tstart = p->pos;
  p->tloc = (ts_loc_t){p->line, (int)(p->pos - p->line_start) + 1};
  if (p->pos >= p->len) {
    p->tok = T_EOF;
    p->tlen = 0;
    return TS_OK;
  }
  char c = p->s[p->pos];
  if (is_ident_start(c)) {
    while (p->pos < p->len && is_ident_char(p->s[p->pos])) p->pos++;
    p->tok = T_IDENT;
  } else if (is_digit(c) || (c == '.' && p->pos + 1 < p->len && is_digit(p->s[p->pos + 1]))) {
    bool hex = c == '0' && p->pos + 1 < p->len && (p->s[p->pos + 1] == 'x' || p->s[p->pos + 1] == 'X');
    p->pos++;
    while (p->pos < p->len) {
      char d = p->s[p->pos];
      if (is_ident_char(d) || d == '.') {
        p->pos++;
      } else if ((d == '+' || d == '-') && !hex && (p->s[p->pos - 1] == 'e' || p->s[p->pos - 1] == 'E')) {
        p->pos++;
      } else {
        break;
      }
    }
    p->tok = T_NUMBER;
  } else if (c == '"' || c == '\'') {
    p->pos++;
    for (;;) {
      if (p->pos >= p->len || p->s[p->pos] == '\n') {
        p->tlen = p->pos - p->tstart;
        return error_at(p, p->tstart, "unterminated string");
      }
      char d = p->s[p->pos++];
      if (d == c) break;
      if (d == '\\' && p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
    }
    p->tok = T_STRING;
  } else if (strchr("{}<>[]:,;-", c)) {
    p->pos++;
    p->tok = T_PUNCT;
  } else {
    p->tlen = 1;
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
      return error_at(p, p->tstart, "unexpected character 0x%02x", (unsigned char)c);
    return error_at(p, p->tstart, "unexpected character '%c'", c);
  }
  p->tlen = p->pos - p->tstart;
  return TS_OK;
}

static bool is_punct(const parser_t *p, char c) { return p->tok == T_PUNCT && p->s[p->tstart] == c; }
static bool is_word(const parser_t *p, const char *w) {
  return p->tok == T_IDENT && p->tlen == strlen(w) && memcmp(p->s + p->tstart, w, p->tlen) == 0;
}

static ts_status_t expect(parser_t *p, char c, const char *what) {
  char buf[64];
  if (!is_punct(p, c)) return error_at(p, p->tstart, "expected '%c' %s, found %s", c, what, tok_desc(p, buf, sizeof buf));
  return next(p);
}

/* ---- values -------------------------------------------------------------- */

static size_t elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
    return 4;
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    return 8;
  case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
  case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
  case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
  case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
  case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
  }
  return 0;
}

static const char *type_name(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32: return "int32";
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: return "uint32";
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64: return "int64";
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: return "uint64";
  case PROTOBUF_C_TYPE_FLOAT: return "float";
  case PROTOBUF_C_TYPE_DOUBLE: return "double";
  case PROTOBUF_C_TYPE_BOOL: return "bool";
  case PROTOBUF_C_TYPE_ENUM: return "enum";
  case PROTOBUF_C_TYPE_STRING: return "string";
  case PROTOBUF_C_TYPE_BYTES: return "bytes";
  case PROTOBUF_C_TYPE_MESSAGE: return "message";
  }
  return "?";
}

/* Unsigned magnitude of an integer token: decimal, 0x hex or 0 octal. */
static bool parse_magnitude(const char *s, size_t n, uint64_t *out) {
  unsigned base = 10;
  size_t i = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (n > 1 && s[0] == '0') {
    base = 8;
    i = 1;
  }
  uint64_t v = 0;
  for (; i < n; i++) {
    unsigned d;
    char c = s[i];
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return false;
    if (d >= base) return false;
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

/* Decodes the string token(s) at the parser into a ts_malloc'd buffer. */
static ts_status_t parse_string(parser_t *p, const ProtobufCFieldDescriptor *f, char **out, size_t *out_len) {
  ts_buf_t b = {0};
  ts_buf_append(&b, "", 0);
  do {
    const char *s = p->s + p->tstart;
    size_t n = p->tlen - 1;
    for (size_t i = 1; i < n; i++) {
      char c = s[i];
      if (c != '\\') {
        ts_buf_putc(&b, c);
        continue;
      }
      size_t esc = p->tstart + i;
      c = s[++i];
      switch (c) {
      case 'n': ts_buf_putc(&b, '\n'); break;
      case 't': ts_buf_putc(&b, '\t'); break;
      case 'r': ts_buf_putc(&b, '\r'); break;
      case 'a': ts_buf_putc(&b, '\a'); break;
      case 'b': ts_buf_putc(&b, '\b'); break;
      case 'f': ts_buf_putc(&b, '\f'); break;
      case 'v': ts_buf_putc(&b, '\v'); break;
      case '\\': case '\'': case '"': case '?': ts_buf_putc(&b, c); break;
      case 'x': case 'X': {
        unsigned v = 0;
        int k = 0;
        while (k < 2 && i + 1 < n && strchr("0123456789abcdefABCDEF", s[i + 1])) {
          char h = s[++i];
          v = v * 16 + (unsigned)(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
          k++;
        }
        if (k == 0) {
          ts_buf_free(&b);
          return error_at(p, esc, "\\x escape without hex digits");
        }
        ts_buf_putc(&b, (char)v);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          unsigned v = (unsigned)(c - '0');
          for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
            v = v * 8 + (unsigned)(s[++i] - '0');
          if (v > 255) {
            ts_buf_free(&b);
            return error_at(p, esc, "octal escape out of range");
          }
          ts_buf_putc(&b, (char)v);
        } else {
          ts_buf_free(&b);
          return error_at(p, esc, "unknown escape '\\%c'", c);
        }
      }
    }
    TS_CHECK(next(p));
  } while (p->tok == T_STRING);
  if (b.oom) {
    ts_buf_free(&b);
    return TS_ERR_NOMEM;
  }
  if (f->type == PROTOBUF_C_TYPE_STRING && memchr(b.data, '\0', b.len)) {
    ts_buf_free(&b);
    return error_at(p, p->tstart, "string field '%s' holds a NUL byte", f->name);
  }
  *out = b.data;
  *out_len = b.len;
  return TS_OK;
}

/* Parses one scalar value of field f into `dst` (elem_size bytes). */
static ts_status_t parse_scalar(parser_t *p, const ProtobufCFieldDescriptor *f, void *dst) {
  char buf[64];
  size_t at = p->tstart;
  if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES) {
    if (p->tok != T_STRING)
      return error_at(p, at, "expected a string for field '%s', found %s", f->name, tok_desc(p, buf, sizeof buf));
    char *s = NULL;
    size_t n = 0;
    TS_CHECK(parse_string(p, f, &s, &n));
    if (f->type == PROTOBUF_C_TYPE_STRING) {
      *(char **)dst = s;
    } else {
      ((ProtobufCBinaryData *)dst)->data = (uint8_t *)s;
      ((ProtobufCBinaryData *)dst)->len = n;
    }
    return TS_OK;
  }
  if (f->type == PROTOBUF_C_TYPE_BOOL) {
    protobuf_c_boolean v;
    if (is_word(p, "true") || is_word(p, "True") || is_word(p, "t") ||
        (p->tok == T_NUMBER && p->tlen == 1 && p->s[at] == '1'))
      v = 1;
    else if (is_word(p, "false") || is_word(p, "False") || is_word(p, "f") ||
             (p->tok == T_NUMBER && p->tlen == 1 && p->s[at] == '0'))
      v = 0;
    else
      return error_at(p, at, "expected true or false for field '%s', found %s", f->name, tok_desc(p, buf, sizeof buf));
    *(protobuf_c_boolean *)dst = v;
    return next(p);
  }
  if (f->type == PROTOBUF_C_TYPE_ENUM && p->tok == T_IDENT) {
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    char name[128];
    if (p->tlen >= sizeof name) return error_at(p, at, "enum value name too long");
    memcpy(name, p->s + at, p->tlen);
    name[p->tlen] = 0;
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(ed, name);
    if (!ev) return error_at(p, at, "unknown value '%s' for enum %s (field '%s')", name, ed->name, f->name);
    *(int *)dst = ev->value;
    return next(p);
  }
  bool neg = false;
  if (is_punct(p, '-')) {
    neg = true;
    TS_CHECK(next(p));
  }
  if (f->type == PROTOBUF_C_TYPE_FLOAT || f->type == PROTOBUF_C_TYPE_DOUBLE) {
    double v;
    if (p->tok == T_IDENT && (is_word(p, "inf") || is_word(p, "infinity") || is_word(p, "Infinity"))) {
      v = INFINITY;
    } else if (p->tok == T_IDENT && (is_word(p, "nan") || is_word(p, "NaN"))) {
      v = NAN;
    } else if (p->tok == T_NUMBER && p->tlen < sizeof buf) {
      memcpy(buf, p->s + p->tstart, p->tlen);
      size_t n = p->tlen;
      if (n > 1 && (buf[n - 1] == 'f' || buf[n - 1] == 'F') && buf[0] != '0') n--; /* 1.5f */
      buf[n] = 0;
      char *end;
      errno = 0;
      v = strtod(buf, &end);
      if (*end || n == 0) return error_at(p, p->tstart, "malformed number '%s' for field '%s'", buf, f->name);
    } else {
      return error_at(p, p->tstart, "expected a number for field '%s', found %s", f->name, tok_desc(p, buf, sizeof buf));
    }
    if (neg) v = -v;
    if (f->type == PROTOBUF_C_TYPE_FLOAT) *(float *)dst = (float)v;
    else *(double *)dst = v;
    return next(p);
  }
  /* integers and enums by number */
  uint64_t mag;
  if (p->tok != T_NUMBER)
    return error_at(p, p->tstart, "expected an integer for field '%s', found %s", f->name, tok_desc(p, buf, sizeof buf));
  if (!parse_magnitude(p->s + p->tstart, p->tlen, &mag))
    return error_at(p, p->tstart, "malformed integer '%.*s' for %s field '%s'", (int)(p->tlen > 40 ? 40 : p->tlen),
                    p->s + p->tstart, type_name(f->type), f->name);
  bool is_signed = true;
  uint64_t max = INT64_MAX;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_ENUM:
    max = INT32_MAX;
    break;
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
    max = UINT32_MAX;
    is_signed = false;
    break;
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    max = UINT64_MAX;
    is_signed = false;
    break;
  default:
    break;
  }
  bool ok = neg ? (is_signed && mag <= max + 1) : mag <= max;
  if (neg && mag == 0) ok = true;
  if (!ok)
    return error_at(p, p->tstart, "%s%.*s is out of range for %s field '%s'", neg ? "-" : "",
                    (int)(p->tlen > 40 ? 40 : p->tlen), p->s + p->tstart, type_name(f->type), f->name);
  switch (elem_size(f->type)) {
  case 4:
    if (is_signed) *(int32_t *)dst = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    else *(uint32_t *)dst = (uint32_t)mag;
    break;
  default:
    if (is_signed) *(int64_t *)dst = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    else *(uint64_t *)dst = mag;
    break;
  }
  return next(p);
}

static ts_status_t parse_body(parser_t *p, ProtobufCMessage *msg, char close);

static ts_status_t new_message(const ProtobufCMessageDescriptor *d, ProtobufCMessage **out) {
  ProtobufCMessage *m = ts_malloc(d->sizeof_message);
  if (!m) return TS_ERR_NOMEM;
  d->message_init(m);
  *out = m;
  return TS_OK;
}

/* '{' body '}' or '<' body '>' into a new message of type d. */
static ts_status_t parse_message_value(parser_t *p, const ProtobufCMessageDescriptor *d, const char *field,
                                       ProtobufCMessage **out) {
  char buf[64];
  char close;
  if (is_punct(p, '{')) close = '}';
  else if (is_punct(p, '<')) close = '>';
  else return error_at(p, p->tstart, "expected '{' to open message field '%s', found %s", field, tok_desc(p, buf, sizeof buf));
  if (++p->depth > MAX_DEPTH) return error_at(p, p->tstart, "messages nested deeper than %d", MAX_DEPTH);
  TS_CHECK(next(p));
  ProtobufCMessage *m;
  TS_CHECK(new_message(d, &m));
  ts_status_t st = parse_body(p, m, close);
  if (st < 0) {
    protobuf_c_message_free_unpacked(m, &ts_pb_allocator);
    return st;
  }
  p->depth--;
  *out = m;
  return TS_OK;
}

/* Appends one element slot to a repeated field; returns it zeroed. Arrays we
 * grow keep a power-of-two capacity, so appends cost amortised O(1). */
static void *append_slot(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f) {
  size_t *n = (size_t *)((char *)msg + f->quantifier_offset);
  void **arr = (void **)((char *)msg + f->offset);
  size_t es = elem_size(f->type);
  if (*n == 0 || (*n & (*n - 1)) == 0) {
    size_t cap = *n ? *n * 2 : 1;
    void *grown = ts_realloc(*arr, cap * es);
    if (!grown) return NULL;
    *arr = grown;
  }
  void *slot = (char *)*arr + (*n)++ * es;
  memset(slot, 0, es);
  return slot;
}

/* One value of field f (after the ':' if any). */
static ts_status_t parse_one(parser_t *p, ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f) {
  void *dst;
  union { char bytes[16]; void *ptr; double d; int64_t i; } tmp;
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    /* Parse first, append after, so a failed value leaves no half slot. */
    dst = &tmp;
  } else {
    dst = (char *)msg + f->offset;
  }
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    TS_CHECK(parse_message_value(p, f->descriptor, f->name, (ProtobufCMessage **)dst));
  } else {
    if (f->label != PROTOBUF_C_LABEL_REPEATED && f->type == PROTOBUF_C_TYPE_STRING) {
      /* proto3 strings start as the shared empty string; replace, do not free. */
      char *s = *(char **)dst;
      if (s && s != protobuf_c_empty_string && s != f->default_value) ts_free(s);
      *(char **)dst = NULL;
    }
    TS_CHECK(parse_scalar(p, f, dst));
  }
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    void *slot = append_slot(msg, f);
    if (!slot) {
      if (f->type == PROTOBUF_C_TYPE_MESSAGE) protobuf_c_message_free_unpacked(*(ProtobufCMessage **)dst, &ts_pb_allocator);
      else if (f->type == PROTOBUF_C_TYPE_STRING) ts_free(*(char **)dst);
      else if (f->type == PROTOBUF_C_TYPE_BYTES) ts_free(((ProtobufCBinaryData *)dst)->data);
      return TS_ERR_NOMEM;
    }
    memcpy(slot, dst, elem_size(f->type));
  } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
             f->type != PROTOBUF_C_TYPE_STRING) {
    *(protobuf_c_boolean *)((char *)msg + f->quantifier_offset) = 1;
  }
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) *(uint32_t *)((char *)msg + f->quantifier_offset) = f->id;
  return TS_OK;
}

/* HloInstructionProto.iota_collective_device_list: XLA's text tables name it,
 * its field number is unconfirmed; keep it in collective_device_list. */
static const char IOTA_ALIAS[] = "iota_collective_device_list";

static ts_status_t parse_iota_alias(parser_t *p, Xla__HloInstructionProto *hi, size_t name_at) {
  if (hi->collective_device_list)
    return error_at(p, name_at, "'%s' given together with collective_device_list, or twice", IOTA_ALIAS);
  if (is_punct(p, ':')) TS_CHECK(next(p));
  ProtobufCMessage *iota;
  TS_CHECK(parse_message_value(p, &xla__iota_replica_group_list_proto__descriptor, IOTA_ALIAS, &iota));
  ProtobufCMessage *cdl;
  ts_status_t st = new_message(&xla__collective_device_list_proto__descriptor, &cdl);
  if (st < 0) {
    protobuf_c_message_free_unpacked(iota, &ts_pb_allocator);
    return st;
  }
  ((Xla__CollectiveDeviceListProto *)cdl)->iota_replica_group_list = (Xla__IotaReplicaGroupListProto *)iota;
  hi->collective_device_list = (Xla__CollectiveDeviceListProto *)cdl;
  return TS_OK;
}

static ts_status_t parse_body(parser_t *p, ProtobufCMessage *msg, char close) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  bool seen[64] = {0};
  char buf[64];
  for (;;) {
    if (p->tok == T_EOF) {
      if (close == 0) return TS_OK;
      return error_at(p, p->tstart, "unexpected end of input, expected '%c' to close %s", close, d->name);
    }
    if (close && is_punct(p, close)) return next(p);
    if (p->tok != T_IDENT) {
      if (is_punct(p, '['))
        return error_at(p, p->tstart, "extensions and Any ('[...]') are not supported in %s", d->name);
      return error_at(p, p->tstart, "expected a field name in %s, found %s", d->name, tok_desc(p, buf, sizeof buf));
    }
    size_t name_at = p->tstart;
    char name[128];
    if (p->tlen >= sizeof name) return error_at(p, name_at, "field name too long");
    memcpy(name, p->s + p->tstart, p->tlen);
    name[p->tlen] = 0;
    TS_CHECK(next(p));
    if (d == &xla__hlo_instruction_proto__descriptor && strcmp(name, IOTA_ALIAS) == 0) {
      TS_CHECK(parse_iota_alias(p, (Xla__HloInstructionProto *)msg, name_at));
    } else {
      const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
      if (!f) return error_at(p, name_at, "unknown field '%s' in %s", name, d->name);
      size_t fi = (size_t)(f - d->fields);
      if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        bool set_before = f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)((char *)msg + f->offset) != NULL;
        if ((fi < 64 && seen[fi]) || set_before)
          return error_at(p, name_at, "field '%s' of %s given twice", name, d->name);
        if (fi < 64) seen[fi] = true;
      }
      bool colon = false;
      if (is_punct(p, ':')) {
        colon = true;
        TS_CHECK(next(p));
      }
      if (!colon && f->type != PROTOBUF_C_TYPE_MESSAGE)
        return error_at(p, p->tstart, "expected ':' after field '%s', found %s", name, tok_desc(p, buf, sizeof buf));
      if (is_punct(p, '[')) {
        if (f->label != PROTOBUF_C_LABEL_REPEATED)
          return error_at(p, p->tstart, "a list value for field '%s', which is not repeated", name);
        TS_CHECK(next(p));
        if (!is_punct(p, ']')) {
          for (;;) {
            TS_CHECK(parse_one(p, msg, f));
            if (is_punct(p, ']')) break;
            TS_CHECK(expect(p, ',', "or ']' in a list value"));
          }
        }
        TS_CHECK(next(p));
      } else {
        TS_CHECK(parse_one(p, msg, f));
      }
    }
    if (is_punct(p, ',') || is_punct(p, ';')) TS_CHECK(next(p));
  }
}

ts_status_t ts_textpb_parse(const ts_source_t *src, const ProtobufCMessageDescriptor *desc,
                            ProtobufCMessage **out, size_t *err_offset, ts_diag_t *diag) {
  parser_t p = {.src = src, .s = src->text, .len = src->len, .line = 1, .diag = diag};
  ProtobufCMessage *m;
  TS_CHECK(new_message(desc, &m));
  ts_status_t st = next(&p);
  if (st >= 0) st = parse_body(&p, m, 0);
  if (st < 0) {
    protobuf_c_message_free_unpacked(m, &ts_pb_allocator);
    if (err_offset) *err_offset = p.err_offset;
    return st;
  }
  *out = m;
  return TS_OK;
}

/* ---- printer ------------------------------------------------------------- */

static void indent(ts_buf_t *b, int n) {
  for (int i = 0; i < n; i++) ts_buf_puts(b, "  ");
}

static void print_string(ts_buf_t *b, const uint8_t *s, size_t n) {
  ts_buf_putc(b, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    switch (c) {
    case '\n': ts_buf_puts(b, "\\n"); break;
    case '\r': ts_buf_puts(b, "\\r"); break;
    case '\t': ts_buf_puts(b, "\\t"); break;
    case '"': ts_buf_puts(b, "\\\""); break;
    case '\'': ts_buf_puts(b, "\\'"); break;
    case '\\': ts_buf_puts(b, "\\\\"); break;
    default:
      if (c < 0x20 || c >= 0x7f) ts_buf_printf(b, "\\%03o", c);
      else ts_buf_putc(b, (char)c);
    }
  }
  ts_buf_putc(b, '"');
}

static void print_message(ts_buf_t *b, const ProtobufCMessage *m, int depth);

static void print_double(ts_buf_t *b, double v) {
  if (isnan(v)) ts_buf_puts(b, "nan");
  else if (isinf(v)) ts_buf_puts(b, v < 0 ? "-inf" : "inf");
  else ts_buf_printf(b, "%.17g", v);
}

static void print_value(ts_buf_t *b, const ProtobufCFieldDescriptor *f, const char *name, const void *v, int depth) {
  indent(b, depth);
  ts_buf_puts(b, name);
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    ts_buf_puts(b, " {\n");
    size_t mark = b->len;
    print_message(b, *(const ProtobufCMessage *const *)v, depth + 1);
    if (b->len == mark && !b->oom) { /* empty: "name {}" as XLA writes it */
      b->len = mark - 2;
      b->data[b->len] = 0;
      ts_buf_puts(b, "{}\n");
    } else {
      indent(b, depth);
      ts_buf_puts(b, "}\n");
    }
    return;
  }
  ts_buf_puts(b, ": ");
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    ts_buf_printf(b, "%" PRId32, *(const int32_t *)v);
    break;
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
    ts_buf_printf(b, "%" PRIu32, *(const uint32_t *)v);
    break;
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    ts_buf_printf(b, "%" PRId64, *(const int64_t *)v);
    break;
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    ts_buf_printf(b, "%" PRIu64, *(const uint64_t *)v);
    break;
  case PROTOBUF_C_TYPE_FLOAT: print_double(b, *(const float *)v); break;
  case PROTOBUF_C_TYPE_DOUBLE: print_double(b, *(const double *)v); break;
  case PROTOBUF_C_TYPE_BOOL: ts_buf_puts(b, *(const protobuf_c_boolean *)v ? "true" : "false"); break;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)v);
    if (ev) ts_buf_puts(b, ev->name);
    else ts_buf_printf(b, "%d", *(const int *)v);
    break;
  }
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(const char *const *)v;
    print_string(b, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
    break;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    const ProtobufCBinaryData *bd = v;
    print_string(b, bd->data, bd->len);
    break;
  }
  case PROTOBUF_C_TYPE_MESSAGE: break;
  }
  ts_buf_putc(b, '\n');
}

/* Whether a proto3 singular field holds its default (and is not printed). */
static bool is_default(const ProtobufCFieldDescriptor *f, const void *v) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(const char *const *)v;
    return !s || !*s;
  }
  case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)v)->len == 0;
  case PROTOBUF_C_TYPE_MESSAGE: return *(const void *const *)v == NULL;
  case PROTOBUF_C_TYPE_FLOAT: return *(const float *)v == 0 && !signbit(*(const float *)v);
  case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)v == 0 && !signbit(*(const double *)v);
  default: {
    size_t n = elem_size(f->type);
    static const char zero[8];
    return memcmp(v, zero, n) == 0;
  }
  }
}

static void print_message(ts_buf_t *b, const ProtobufCMessage *m, int depth) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *v = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
      const char *arr = *(const char *const *)v;
      for (size_t k = 0; k < n; k++) print_value(b, f, f->name, arr + k * elem_size(f->type), depth);
      continue;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      if (*(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id) continue;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
               f->type != PROTOBUF_C_TYPE_STRING) {
      if (!*(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset)) continue;
    } else if (is_default(f, v)) {
      continue;
    }
    if (d == &xla__hlo_instruction_proto__descriptor && f->id == 87) {
      /* An iota-only device list goes back under the name XLA's tables use. */
      const Xla__CollectiveDeviceListProto *cdl = *(Xla__CollectiveDeviceListProto *const *)v;
      if (cdl->n_replica_groups == 0 && cdl->iota_replica_group_list && cdl->base.n_unknown_fields == 0) {
        print_value(b, protobuf_c_message_descriptor_get_field(&xla__collective_device_list_proto__descriptor, 2), IOTA_ALIAS,
                    &cdl->iota_replica_group_list, depth);
        continue;
      }
    }
    print_value(b, f, f->name, v, depth);
  }
}

void ts_textpb_print(const ProtobufCMessage *msg, ts_buf_t *out) { print_message(out, msg, 0); }
