/* The HLO text lexer (hlo_text_format.md section 1, after XLA's hlo_lexer.cc):
 * identifiers, name and attribute-name tokens, the numeric patterns (decimal,
 * dim labels, DxD, pad, int), strings, brace blobs and punctuation. Tokens
 * point into the source; nothing is allocated. */
#include "hlo_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes ---- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_ident_start(char c) { return is_alpha(c) || c == '_'; }
static bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '.' || c == '-'; }
/* What may not directly follow a number: it would make the number malformed. */
static bool is_number_tail(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '.'; }

/* ---- errors ---- */

static ts_loc_t loc_at(const ts_lexer_t *lx, size_t off) {
  return (ts_loc_t){lx->at.line, (int)(off - lx->at.line_start) + 1};
}

static void lex_error(ts_lexer_t *lx, ts_tok_t *t, ts_loc_t loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void lex_error(ts_lexer_t *lx, ts_tok_t *t, ts_loc_t loc, const char *fmt, ...) {
  t->kind = TK_ERROR;
  if (!lx->diag) return;
  va_list ap;
  va_start(ap, fmt);
  ts_diag_verror(lx->diag, lx->src, loc, fmt, ap);
  va_end(ap);
}

/* ---- setup ---- */

void ts_lex_init(ts_lexer_t *lx, const ts_source_t *src, ts_diag_t *diag, int max_nesting) {
  memset(lx, 0, sizeof *lx);
  lx->src = src;
  lx->diag = diag;
  lx->max_nesting = max_nesting;
  lx->at.line = 1;
}

void ts_lex_reset_after(ts_lexer_t *lx, const ts_tok_t *t) {
  lx->at.pos = t->off + t->len;
  lx->at.line = t->line;
  lx->at.line_start = t->off - (size_t)(t->col - 1);
}

/* "Unexpected end of file" points just after the last non-blank byte. */
static ts_loc_t eof_loc(ts_lexer_t *lx) {
  if (lx->have_eof_loc) return lx->eof_loc;
  const char *s = lx->src->text;
  size_t end = lx->src->len;
  while (end > 0 && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\n' ||
                     s[end - 1] == '\r' || s[end - 1] == '\f' || s[end - 1] == '\v'))
    end--;
  int line = 1;
  size_t line_start = 0;
  for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + end - p))) != NULL; p++) {
    line++;
    line_start = (size_t)(p - s) + 1;
  }
  lx->eof_loc = (ts_loc_t){line, (int)(end - line_start) + 1};
  lx->have_eof_loc = true;
  return lx->eof_loc;
}

/* ---- whitespace and comments ---- */

/* Returns false (token set to TK_ERROR) on an unterminated block comment. */
static bool skip_blank(ts_lexer_t *lx, ts_tok_t *t) {
  const char *s = lx->src->text;
  size_t len = lx->src->len;
  for (;;) {
    size_t p = lx->at.pos;
    char c = s[p];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      lx->at.pos++;
    } else if (c == '\n') {
      lx->at.pos++;
      lx->at.line++;
      lx->at.line_start = lx->at.pos;
    } else if (c == '/' && s[p + 1] == '/') {
      size_t q = p + 2; /* to the line break, '\n' or a lone '\r' (old Mac files), counted above */
      while (q < len && s[q] != '\n' && s[q] != '\r') q++;
      lx->at.pos = q;
    } else if (c == '/' && s[p + 1] == '*') {
      ts_loc_t open = loc_at(lx, p);
      size_t q = p + 2;
      for (;;) {
        if (q >= len) {
          lex_error(lx, t, open, "unterminated comment: '/*' has no matching '*/'");
          return false;
        }
        if (s[q] == '*' && s[q + 1] == '/') break;
        if (s[q] == '\n') {
          lx->at.line++;
          lx->at.line_start = q + 1;
        }
        q++;
      }
      lx->at.pos = q + 2;
    } else {
      return true;
    }
  }
}

/* ---- numbers ---- */

static size_t span_digits(const char *s, size_t i) {
  while (is_digit(s[i])) i++;
  return i;
}

static size_t span_set(const char *s, size_t i, const char *set) {
  while (s[i] && strchr(set, s[i])) i++;
  return i;
}

/* -?(\d+.\d*|\d*.\d+)([eE][+-]?\d+)? or -?\d+[eE][+-]?\d+; 0 when no match. */
static size_t match_decimal(const char *s, size_t i) {
  size_t p = i + (s[i] == '-');
  size_t q = span_digits(s, p);
  bool int_digits = q > p, dot = false, exp = false;
  p = q;
  if (s[p] == '.') {
    q = span_digits(s, p + 1);
    if (int_digits || q > p + 1) {
      dot = true;
      p = q;
    }
  }
  if (!int_digits && !dot) return 0;
  if (s[p] == 'e' || s[p] == 'E') {
    q = p + 1;
    if (s[q] == '+' || s[q] == '-') q++;
    size_t r = span_digits(s, q);
    if (r > q) {
      exp = true;
      p = r;
    }
  }
  return dot || exp ? p : 0;
}

/* [0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,} */
static size_t match_dim_labels(const char *s, size_t i) {
  size_t p = span_set(s, i, "0123456789bf?");
  if (p - i < 2 || s[p] != '_') return 0;
  size_t q = span_set(s, p + 1, "0123456789io?");
  if (q - (p + 1) < 2 || s[q] != '-' || s[q + 1] != '>') return 0;
  size_t r = span_set(s, q + 2, "0123456789bf?");
  return r - (q + 2) < 2 ? 0 : r;
}

/* \d+(x\d+)+ */
static size_t match_dxd(const char *s, size_t i) {
  size_t p = span_digits(s, i);
  if (p == i) return 0;
  int parts = 0;
  while (s[p] == 'x' && is_digit(s[p + 1])) {
    p = span_digits(s, p + 1);
    parts++;
  }
  return parts ? p : 0;
}

/* One -?\d+_-?\d+(_\d+)? group of a padding token. */
static size_t match_pad_group(const char *s, size_t i) {
  size_t p = i + (s[i] == '-');
  size_t q = span_digits(s, p);
  if (q == p || s[q] != '_') return 0;
  p = q + 1 + (s[q + 1] == '-');
  q = span_digits(s, p);
  if (q == p) return 0;
  if (s[q] == '_' && is_digit(s[q + 1])) q = span_digits(s, q + 1);
  return q;
}

static size_t match_pad(const char *s, size_t i) {
  size_t p = match_pad_group(s, i);
  if (!p) return 0;
  for (size_t q; s[p] == 'x' && (q = match_pad_group(s, p + 1)) != 0;) p = q;
  return p;
}

/* -?0x[hex]*(.[hex]*)?([pP][+-]?\d+)?: *is_float when it has a '.' or 'p'. */
static size_t match_hex(const char *s, size_t i, bool *is_float) {
  size_t p = i + (s[i] == '-');
  if (s[p] != '0' || (s[p + 1] != 'x' && s[p + 1] != 'X')) return 0;
  p += 2;
  size_t digits = 0;
  while (is_hex(s[p])) p++, digits++;
  *is_float = false;
  if (s[p] == '.') {
    *is_float = true;
    p++;
    while (is_hex(s[p])) p++, digits++;
  }
  if (!digits) return 0;
  if (s[p] == 'p' || s[p] == 'P') {
    size_t q = p + 1;
    if (s[q] == '+' || s[q] == '-') q++;
    size_t r = span_digits(s, q);
    if (r == q) return 0;
    *is_float = true;
    p = r;
  }
  return p;
}

/* Parses [p, end) as a float with strtod (which stops at `end` because the
 * bytes are copied). Returns false when the text is too long to copy. */
static bool to_double(const char *p, size_t n, double *out) {
  char buf[512];
  if (n >= sizeof buf) return false;
  memcpy(buf, p, n);
  buf[n] = '\0';
  *out = strtod(buf, NULL);
  return true;
}

/* Makes t the float s[i..end); false after reporting a number too long to
 * convert. */
static bool lex_float(ts_lexer_t *lx, ts_tok_t *t, size_t i, size_t end) {
  t->kind = TK_FLOAT;
  if (to_double(lx->src->text + i, end - i, &t->f)) return true;
  lex_error(lx, t, loc_at(lx, i), "number is too long (%zu characters)", end - i);
  lx->at.pos = end;
  return false;
}

static void lex_number(ts_lexer_t *lx, ts_tok_t *t) {
  const char *s = lx->src->text;
  size_t i = t->off, end = 0;
  bool hex_float = false;

  if (s[i] == '-' && (strncmp(s + i + 1, "inf", 3) == 0 || strncmp(s + i + 1, "nan", 3) == 0) &&
      !is_ident_char(s[i + 4])) {
    t->kind = TK_FLOAT;
    t->f = s[i + 1] == 'i' ? -INFINITY : -NAN;
    end = i + 4;
  } else if ((end = match_decimal(s, i)) != 0) {
    if (!lex_float(lx, t, i, end)) return;
  } else if ((end = match_dim_labels(s, i)) != 0) {
    t->kind = TK_DIM_LABELS;
  } else if ((end = match_dxd(s, i)) != 0 && !is_number_tail(s[end])) {
    t->kind = TK_DXD;
  } else if ((end = match_pad(s, i)) != 0) {
    t->kind = TK_PAD;
  } else if ((end = match_hex(s, i, &hex_float)) != 0) {
    if (hex_float) {
      if (!lex_float(lx, t, i, end)) return;
    } else {
      t->kind = TK_INT;
      t->neg = s[i] == '-';
      uint64_t u = 0;
      for (size_t k = i + (t->neg ? 3 : 2); k < end; k++) {
        unsigned d = is_digit(s[k]) ? (unsigned)(s[k] - '0') : (unsigned)((s[k] | 0x20) - 'a' + 10);
        if (u > (UINT64_MAX >> 4)) {
          lex_error(lx, t, loc_at(lx, i), "integer '%.*s' does not fit in 64 bits", (int)(end - i), s + i);
          lx->at.pos = end;
          return;
        }
        u = u << 4 | d;
      }
      t->u = u;
    }
  } else if ((s[i] == '-' && is_digit(s[i + 1])) || is_digit(s[i])) {
    t->kind = TK_INT;
    t->neg = s[i] == '-';
    end = span_digits(s, i + t->neg);
    uint64_t u = 0;
    for (size_t k = i + t->neg; k < end; k++) {
      unsigned d = (unsigned)(s[k] - '0');
      if (u > (UINT64_MAX - d) / 10) {
        size_t tail = end;
        while (is_number_tail(s[tail])) tail++;
        lex_error(lx, t, loc_at(lx, i), "integer '%.*s' does not fit in 64 bits", (int)(tail - i), s + i);
        lx->at.pos = tail;
        return;
      }
      u = u * 10 + d;
    }
    t->u = u;
  } else {
    lex_error(lx, t, loc_at(lx, i), "unexpected character '%c'", s[i]);
    lx->at.pos = i + 1;
    return;
  }

  if (is_number_tail(s[end])) {
    size_t tail = end;
    while (is_number_tail(s[tail]) || ((s[tail] == '-' || s[tail] == '+') && is_number_tail(s[tail + 1])))
      tail++;
    lex_error(lx, t, loc_at(lx, i), "malformed number '%.*s'", (int)(tail - i), s + i);
    lx->at.pos = tail;
    return;
  }
  lx->at.pos = end;
  t->len = end - i;
}

/* ---- strings ---- */

static void lex_string(ts_lexer_t *lx, ts_tok_t *t) {
  const char *s = lx->src->text;
  size_t len = lx->src->len, i = t->off, p = i + 1;
  char quote = s[i];
  ts_loc_t open = loc_at(lx, i);
  ts_lex_pos_t at = lx->at;
  t->escapes = false;
  for (;;) {
    if (p >= len) {
      lex_error(lx, t, open, "unterminated string: %c has no closing %c", quote, quote);
      lx->at.pos = len;
      return;
    }
    char c = s[p];
    if (c == quote) break;
    if (c == '\\') {
      t->escapes = true;
      if (++p >= len) continue; /* reported as unterminated on the next turn */
      c = s[p];
    }
    if (c == '\n') {
      at.line++;
      at.line_start = p + 1;
    }
    p++;
  }
  t->kind = TK_STRING;
  t->s = s + i + 1;
  t->n = p - i - 1;
  t->len = p + 1 - i;
  lx->at.pos = p + 1;
  lx->at.line = at.line;
  lx->at.line_start = at.line_start;
}

/* ---- identifiers ---- */

static void lex_ident(ts_lexer_t *lx, ts_tok_t *t, size_t start, bool pct) {
  const char *s = lx->src->text;
  size_t p = start;
  while (is_ident_char(s[p])) p++;
  /* `b01f_01io->b01f` starts like an identifier and stops at '>'. */
  size_t dl;
  if (!pct && s[p] == '>' && s[p - 1] == '-' && (dl = match_dim_labels(s, start)) != 0) {
    t->kind = TK_DIM_LABELS;
    t->len = dl - t->off;
    lx->at.pos = dl;
    if (is_number_tail(s[dl])) {
      size_t tail = dl;
      while (is_ident_char(s[tail])) tail++;
      lex_error(lx, t, loc_at(lx, t->off), "malformed dim labels '%.*s'", (int)(tail - t->off), s + t->off);
      lx->at.pos = tail;
    }
    return;
  }
  t->s = s + start;
  t->n = p - start;
  t->pct = pct;
  t->kind = TK_IDENT;
  if (s[p] == ':') {
    t->kind = TK_NAME;
    p++;
  } else if (s[p] == '=' && !pct) {
    t->kind = TK_ATTR;
    p++;
  }
  t->len = p - t->off;
  lx->at.pos = p;
}

/* ---- the token loop ---- */

void ts_lex_next(ts_lexer_t *lx, ts_tok_t *t) {
  memset(t, 0, sizeof *t);
  if (!skip_blank(lx, t)) return;
  const char *s = lx->src->text;
  size_t p = lx->at.pos;
  t->off = p;
  t->line = lx->at.line;
  t->col = (int)(p - lx->at.line_start) + 1;
  t->len = 1;
  if (p >= lx->src->len) {
    ts_loc_t l = eof_loc(lx);
    t->kind = TK_EOF;
    t->len = 0;
    t->line = l.line;
    t->col = l.col;
    return;
  }
  char c = s[p];
  switch (c) {
  case '{': t->kind = TK_LBRACE; break;
  case '}': t->kind = TK_RBRACE; break;
  case '(': t->kind = TK_LPAREN; break;
  case ')': t->kind = TK_RPAREN; break;
  case '[': t->kind = TK_LBRACKET; break;
  case ']': t->kind = TK_RBRACKET; break;
  case ',': t->kind = TK_COMMA; break;
  case ':': t->kind = TK_COLON; break;
  case '=': t->kind = TK_EQUAL; break;
  case '*': t->kind = TK_STAR; break;
  case '#': t->kind = TK_HASH; break;
  case '+': t->kind = TK_PLUS; break;
  case '~': t->kind = TK_TILDE; break;
  case '"':
  case '\'': lex_string(lx, t); return;
  case '%':
    if (!is_ident_start(s[p + 1])) {
      lex_error(lx, t, loc_at(lx, p), "expected a name after '%%'");
      lx->at.pos = p + 1;
      return;
    }
    lex_ident(lx, t, p + 1, true);
    return;
  case '<':
    if (s[p + 1] != '=') {
      lex_error(lx, t, loc_at(lx, p), "unexpected character '<' (did you mean '<='?)");
      lx->at.pos = p + 1;
      return;
    }
    t->kind = TK_LEQ;
    t->len = 2;
    break;
  case '-':
    if (s[p + 1] == '>') {
      t->kind = TK_ARROW;
      t->len = 2;
      break;
    }
    lex_number(lx, t);
    return;
  case '?':
    if (match_dim_labels(s, p)) {
      lex_number(lx, t);
      return;
    }
    t->kind = TK_QUESTION;
    break;
  case '.':
    if (s[p + 1] == '.' && s[p + 2] == '.') {
      t->kind = TK_ELLIPSIS;
      t->len = 3;
      break;
    }
    if (is_digit(s[p + 1])) {
      lex_number(lx, t);
      return;
    }
    lex_error(lx, t, loc_at(lx, p), "unexpected character '.'");
    lx->at.pos = p + 1;
    return;
  default:
    if (is_digit(c)) {
      lex_number(lx, t);
      return;
    }
    if (is_ident_start(c)) {
      lex_ident(lx, t, p, false);
      return;
    }
    if ((unsigned char)c >= 0x80) {
      /* A valid UTF-8 sequence (checked up front): show the whole character. */
      size_t n = 1;
      while (n < 4 && ((unsigned char)s[p + n] & 0xC0) == 0x80) n++;
      lex_error(lx, t, loc_at(lx, p), "unexpected character '%.*s'", (int)n, s + p);
      lx->at.pos = p + n;
    } else if (c >= 0x20 && c < 0x7f) {
      lex_error(lx, t, loc_at(lx, p), "unexpected character '%c'", c);
      lx->at.pos = p + 1;
    } else {
      lex_error(lx, t, loc_at(lx, p), "unexpected control character 0x%02X", (unsigned)(unsigned char)c);
      lx->at.pos = p + 1;
    }
    return;
  }
  lx->at.pos = p + t->len;
}

/* ---- verbatim attribute values ---- */

bool ts_lex_raw_value(ts_lexer_t *lx, const ts_tok_t *first, size_t *end) {
  const char *s = lx->src->text;
  size_t len = lx->src->len, p = first->off, last = first->off;
  ts_tok_t dummy;
  int depth = 0;
  ts_lex_reset_after(lx, first);
  lx->at.pos = first->off;
  for (; p < len; p++) {
    char c = s[p];
    if (depth == 0 && (c == ',' || c == '\n' || c == '\r' || (c == '/' && (s[p + 1] == '/' || s[p + 1] == '*'))))
      break;
    if (c == '\n') {
      lx->at.line++;
      lx->at.line_start = p + 1;
    } else if (c == '"' || c == '\'') {
      /* Inside brackets a string may span lines (a module's text quoted in
       * origin_recovery_table={...}); at the top level a line break ends it. */
      size_t q = p + 1;
      ts_lex_pos_t at = lx->at;
      while (q < len && s[q] != c && (depth > 0 || s[q] != '\n')) {
        if (s[q] == '\n') {
          at.line++;
          at.line_start = q + 1;
        }
        q += s[q] == '\\' && q + 1 < len ? 2 : 1;
      }
      if (q >= len || s[q] != c) {
        lex_error(lx, &dummy, loc_at(lx, p), "unterminated string: %c has no closing %c", c, c);
        return false;
      }
      lx->at.line = at.line;
      lx->at.line_start = at.line_start;
      p = q;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > lx->max_nesting) {
        lex_error(lx, &dummy, loc_at(lx, p), "nesting deeper than %d levels", lx->max_nesting);
        return false;
      }
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) break;
      depth--;
    }
    if (c != ' ' && c != '\t' && c != '\n') last = p + 1;
  }
  if (depth > 0) {
    lex_error(lx, &dummy, (ts_loc_t){first->line, first->col},
              "unterminated attribute value: a bracket has no match before the end of the file");
    return false;
  }
  lx->at.pos = last;
  *end = last;
  return true;
}

/* ---- brace blobs ---- */

bool ts_lex_blob(ts_lexer_t *lx, const ts_tok_t *open, size_t *end) {
  const char *s = lx->src->text;
  size_t len = lx->src->len, p = open->off + 1;
  ts_tok_t dummy;
  int depth = 1;
  ts_lex_reset_after(lx, open);
  /* strcspn jumps over the plain bytes (the text has no NUL before len,
   * ts_lex_check_encoding saw to that): a metadata blob is mostly them. */
  for (;;) {
    p += strcspn(s + p, "\n\"{}");
    if (p >= len) {
      lex_error(lx, &dummy, (ts_loc_t){open->line, open->col},
                "unterminated '{': no matching '}' before the end of the file");
      return false;
    }
    char c = s[p];
    if (c == '\n') {
      lx->at.line++;
      lx->at.line_start = p + 1;
    } else if (c == '"') {
      size_t q = p + 1;
      ts_lex_pos_t at = lx->at;
      for (;;) {
        q += strcspn(s + q, "\"\\\n");
        if (q >= len || s[q] == '"') break;
        if (s[q] == '\\' && q + 1 < len) q++;
        if (s[q] == '\n') {
          at.line++;
          at.line_start = q + 1;
        }
        q++;
      }
      if (q >= len) {
        lex_error(lx, &dummy, loc_at(lx, p), "unterminated string: \" has no closing \"");
        return false;
      }
      lx->at = at;
      p = q;
    } else if (c == '{') {
      if (++depth > lx->max_nesting) {
        lex_error(lx, &dummy, loc_at(lx, p), "nesting deeper than %d levels", lx->max_nesting);
        return false;
      }
    } else if (c == '}') {
      if (--depth == 0) break;
    }
    p++;
  }
  lx->at.pos = p + 1;
  *end = p + 1;
  return true;
}

/* ---- encoding ---- */

/* Length of the valid UTF-8 sequence at s (which starts with a byte >= 0x80),
 * or 0 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (avail < n) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < n; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return n;
}

size_t ts_utf8_prefix(const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0;
  while (i < len) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t n = utf8_seq(s + i, len - i);
    if (!n) break;
    i += n;
  }
  return i;
}

bool ts_lex_check_encoding(const ts_source_t *src, ts_diag_t *diag) {
  const unsigned char *s = (const unsigned char *)src->text;
  size_t len = src->len, i = 0;
  while (i < len) {
    /* Fast path: eight ASCII bytes with no NUL among them. */
    if (i + 8 <= len) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (!(w & 0x8080808080808080ull) && !((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    size_t bad = i; /* a NUL, or the lead byte of a broken sequence */
    if (s[i] != 0 && s[i] < 0x80) {
      i++;
      continue;
    }
    if (s[i] != 0) {
      size_t n = utf8_seq(s + i, len - i);
      if (n) {
        i += n;
        continue;
      }
    }
    int line = 1;
    size_t line_start = 0;
    for (size_t k = 0; k < bad; k++)
      if (s[k] == '\n') {
        line++;
        line_start = k + 1;
      }
    ts_loc_t loc = {line, (int)(bad - line_start) + 1};
    if (s[bad] != 0) {
      ts_diag_error(diag, src, loc, "invalid UTF-8 byte 0x%02X", (unsigned)s[bad]);
      return false;
    }
    /* The diagnostic quotes the line as a C string: show NULs as blanks. */
    size_t end = bad;
    while (end < len && s[end] != '\n') end++;
    char *copy = ts_malloc(end + 1);
    ts_source_t shown = {src->name, copy, end};
    if (copy) {
      for (size_t k = 0; k < end; k++) copy[k] = s[k] ? (char)s[k] : ' ';
      copy[end] = '\0';
    }
    ts_diag_error(diag, copy ? &shown : src, loc, "NUL byte in the input");
    ts_free(copy);
    return false;
  }
  return true;
}
