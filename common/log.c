/* Logging to stderr with an optional rank prefix, and located diagnostics. */
#include "ts_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static ts_log_level_t g_level = TS_LOG_WARN;
static int g_rank = -1;

void ts_log_set_level(ts_log_level_t lvl) { g_level = lvl; }
void ts_log_set_rank(int rank) { g_rank = rank; }

void ts_log(ts_log_level_t lvl, const char *fmt, ...) {
  static const char *names[] = {"error", "warning", "info", "debug"};
  if (lvl > g_level) return;
  ts_buf_t b = {0};
  if (g_rank >= 0) ts_buf_printf(&b, "[rank %d] ", g_rank);
  ts_buf_printf(&b, "tessera: %s: ", names[lvl]);
  va_list ap;
  va_start(ap, fmt);
  ts_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  ts_buf_putc(&b, '\n');
  if (b.data) fputs(b.data, stderr); /* one write per line keeps ranks apart */
  ts_buf_free(&b);
}

/* Appends the source line holding `loc` and a caret under its column. Tabs
 * in the prefix are kept so the caret lines up in a terminal. A line longer
 * than LINE_MAX_SHOWN (a minified dump) is cut to a window around the caret,
 * with "..." where text was left out. */
enum { LINE_MAX_SHOWN = 200, LINE_CONTEXT = 80 };

static void put_source_line(ts_buf_t *b, const ts_source_t *src, ts_loc_t loc) {
  const char *p = src->text, *end = src->text + src->len;
  for (int line = 1; line < loc.line && p < end; p++)
    if (*p == '\n') line++;
  const char *eol = p;
  while (eol < end && *eol != '\n' && *eol != '\r') eol++;
  const char *caret = p + (loc.col > 1 ? loc.col - 1 : 0);
  if (caret > eol) caret = eol;
  const char *from = p, *to = eol;
  if (eol - p > LINE_MAX_SHOWN) {
    if (caret - p > LINE_CONTEXT) from = caret - LINE_CONTEXT;
    if (eol - caret > LINE_CONTEXT) to = caret + LINE_CONTEXT;
  }
  const char *dots = from > p ? "..." : "";
  ts_buf_puts(b, dots);
  ts_buf_append(b, from, (size_t)(to - from));
  ts_buf_puts(b, to < eol ? "...\n" : "\n");
  ts_buf_puts(b, from > p ? "   " : "");
  for (const char *q = from; q < caret; q++) ts_buf_putc(b, *q == '\t' ? '\t' : ' ');
  ts_buf_puts(b, "^\n");
}

void ts_diag_verror(ts_diag_t *d, const ts_source_t *src, ts_loc_t loc, const char *fmt,
                    va_list ap) {
  if (!d) return;
  d->count++;
  if (d->text) return;
  ts_buf_t b = {0};
  if (src && loc.line > 0)
    ts_buf_printf(&b, "%s:%d:%d: error: ", src->name, loc.line, loc.col);
  else if (src)
    ts_buf_printf(&b, "%s: error: ", src->name);
  else
    ts_buf_puts(&b, "error: ");
  ts_buf_vprintf(&b, fmt, ap);
  ts_buf_putc(&b, '\n');
  if (src && src->text && loc.line > 0) put_source_line(&b, src, loc);
  d->text = b.data; /* NULL only if the first allocation failed */
}

void ts_diag_error(ts_diag_t *d, const ts_source_t *src, ts_loc_t loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_diag_verror(d, src, loc, fmt, ap);
  va_end(ap);
}

void ts_diag_plain(ts_diag_t *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_diag_verror(d, NULL, (ts_loc_t){0, 0}, fmt, ap);
  va_end(ap);
}

void ts_diag_free(ts_diag_t *d) {
  ts_free(d->text);
  d->text = NULL;
  d->count = 0;
}

ts_status_t ts_diag_path_error(ts_diag_t *d, const char *path, ts_status_t st, const char *fmt, ...) {
  ts_source_t src = {.name = path};
  va_list ap;
  va_start(ap, fmt);
  ts_diag_verror(d, &src, (ts_loc_t){0, 0}, fmt, ap);
  va_end(ap);
  return st;
}
