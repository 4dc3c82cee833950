/* HLO internals shared by the files of hlo/: tokens and the lexer
 * (hlo_text_format.md section 1), and the module's packed memory and shape
 * interning the parser builds with. Not part of the public API. */
#ifndef TS_HLO_INTERNAL_H
#define TS_HLO_INTERNAL_H

#include "ts_hlo.h"

typedef enum {
  TK_EOF,
  TK_ERROR,      /* the lexer already reported it */
  TK_IDENT,      /* [A-Za-z_][A-Za-z0-9_.-]*, or %name */
  TK_NAME,       /* an identifier immediately followed by ':' (consumed) */
  TK_ATTR,       /* an identifier immediately followed by '=' (consumed) */
  TK_INT,        /* 42, -7, 0x1f: magnitude in u, sign in neg */
  TK_FLOAT,      /* 1.5, 1e-05, -inf, -nan, 0x1.8p3: value in f */
  TK_STRING,     /* "..." or '...': s/n is the raw text between the quotes */
  TK_DIM_LABELS, /* b01f_01io->b01f */
  TK_DXD,        /* 3x3 */
  TK_PAD,        /* 0_1x2_3_1 */
  TK_LBRACE, TK_RBRACE, TK_LPAREN, TK_RPAREN, TK_LBRACKET, TK_RBRACKET,
  TK_COMMA, TK_COLON, TK_EQUAL, TK_ARROW, TK_LEQ, TK_QUESTION, TK_ELLIPSIS,
  TK_STAR, TK_HASH, TK_PLUS, TK_TILDE,
} ts_tk_t;

typedef struct {
  ts_tk_t kind;
  bool pct;          /* IDENT/NAME written with a leading '%' */
  bool neg;          /* INT: written with a leading '-' */
  bool escapes;      /* STRING: contains a backslash */
  size_t off, len;   /* the whole token in the source (with '%', ':', '=', quotes) */
  const char *s;     /* IDENT/NAME/ATTR: the name alone; STRING: the contents */
  size_t n;
  int line, col;     /* of the token's first byte, 1-based */
  uint64_t u;        /* INT magnitude */
  double f;          /* FLOAT value */
} ts_tok_t;

/* Where the lexer stands; cheap to copy, so the parser peeks by saving it. */
typedef struct {
  size_t pos;
  int line;
  size_t line_start;
} ts_lex_pos_t;

typedef struct {
  const ts_source_t *src; /* text must be NUL-terminated at src->len */
  ts_diag_t *diag;        /* NULL while peeking: errors become TK_ERROR silently */
  int max_nesting;
  ts_lex_pos_t at;
  bool have_eof_loc;
  ts_loc_t eof_loc;
} ts_lexer_t;

void ts_lex_init(ts_lexer_t *lx, const ts_source_t *src, ts_diag_t *diag, int max_nesting);
/* Lexes the next token, skipping whitespace and comments. */
void ts_lex_next(ts_lexer_t *lx, ts_tok_t *t);
/* Scans the brace blob whose '{' starts at source offset `open` (at `open_pos`,
 * the lexer position just after that '{'): braces nest, double-quoted strings
 * are skipped. On success *end is one past the matching '}' and the lexer
 * continues after it. Returns false after reporting an error. */
bool ts_lex_blob(ts_lexer_t *lx, const ts_tok_t *open, size_t *end);
/* Scans the value of an attribute the parser does not know, verbatim, from
 * token `first`: up to a ',' or line break outside brackets and strings, a
 * closing bracket it did not open, a comment, or the end. Real dumps carry
 * attributes newer than any parser, with characters no token covers
 * (`sparsity=L.1@2:4`). On success *end is one past the value's last
 * non-blank byte and the lexer continues there. */
bool ts_lex_raw_value(ts_lexer_t *lx, const ts_tok_t *first, size_t *end);
/* Moves the lexer to just after token t (t must not span lines). */
void ts_lex_reset_after(ts_lexer_t *lx, const ts_tok_t *t);
/* Zeroed module memory carved from pool blocks at `align` (a power of two
 * up to 16) rather than the arena's 16 bytes for every object: instructions,
 * names, operand and attribute arrays. Big requests go to the arena. NULL
 * when out of memory. */
void *ts_hlo_module_alloc(ts_hlo_module_t *m, size_t size, size_t align);
/* The alignment for an array of objects of `elem_size` bytes: the largest
 * power of two dividing it (a type's alignment divides its size), at most 16. */
size_t ts_hlo_align_for(size_t elem_size);
/* A NUL-terminated copy of s[0..n) in module memory. */
char *ts_hlo_module_strndup(ts_hlo_module_t *m, const char *s, size_t n);
/* ts_hlo_shape_intern for a shape the caller built in m's memory and will
 * never modify: it becomes the shared one when no equal shape is there yet
 * (no copy). A tuple's elements must be shared ones already. */
ts_shape_t *ts_hlo_shape_adopt(ts_hlo_module_t *m, ts_shape_t *s);

/* Length of the longest valid UTF-8 prefix of text[0..len). */
size_t ts_utf8_prefix(const char *text, size_t len);
/* Rejects NUL bytes and invalid UTF-8 anywhere in the text, located. */
bool ts_lex_check_encoding(const ts_source_t *src, ts_diag_t *diag);

#endif
