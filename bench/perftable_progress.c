/* Progress of a perf-table sweep on stderr: a bar with the ETA redrawn in
 * place on a terminal, one plain line per point otherwise (logs, CI). */
#include "bench_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

bool ts_bench_progress_mode_from_name(const char *s, ts_bench_progress_mode_t *out) {
  static const char *const names[] = {"auto", "bar", "lines", "none"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (ts_bench_progress_mode_t)i;
      return true;
    }
  return false;
}

static int term_width(FILE *f) {
  struct winsize ws;
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  int n = c ? atoi(c) : 0;
  return n >= 40 ? n : 80;
}

void pt_progress_start(pt_progress_t *p, ts_bench_progress_mode_t mode, size_t points, double work) {
  memset(p, 0, sizeof *p);
  p->f = stderr;
  if (mode == TS_BENCH_PROGRESS_AUTO) mode = isatty(fileno(stderr)) ? TS_BENCH_PROGRESS_BAR : TS_BENCH_PROGRESS_LINES;
  p->mode = mode;
  p->points = points;
  p->work = work;
  p->t0 = pt_now();
}

static void eta(const pt_progress_t *p, double now, char *buf, size_t n) {
  if (p->work_done <= 0 || p->done == 0) {
    snprintf(buf, n, "?");
    return;
  }
  double left = p->work > p->work_done ? p->work - p->work_done : 0;
  ts_bench_format_duration((now - p->t0) * left / p->work_done, buf, n);
}

static void draw_bar(pt_progress_t *p, double now, const char *what) {
  int width = term_width(p->f);
  char e[32], head[96];
  eta(p, now, e, sizeof e);
  double frac = p->points ? (double)p->done / (double)p->points : 1;
  snprintf(head, sizeof head, " %3.0f%% %zu/%zu ETA %s  ", frac * 100, p->done, p->points, e);
  int barw = width / 3;
  int fill = (int)(frac * barw + 0.5);
  fputs("\r[", p->f);
  for (int i = 0; i < barw; i++) fputc(i < fill ? '#' : '.', p->f);
  fputc(']', p->f);
  fputs(head, p->f);
  /* what fits of the label, then clear the rest of the line */
  int room = width - barw - 2 - (int)strlen(head) - 1;
  if (room > 0 && what) fprintf(p->f, "%.*s", room, what);
  fputs("\033[K", p->f);
  fflush(p->f);
}

void pt_progress_step(pt_progress_t *p, double work, const char *what) {
  p->done++;
  p->work_done += work;
  double now = pt_now();
  if (p->mode == TS_BENCH_PROGRESS_LINES) {
    char e[32];
    eta(p, now, e, sizeof e);
    fprintf(p->f, PT_CMD ": [%zu/%zu] %s (ETA %s)\n", p->done, p->points, what ? what : "", e);
    fflush(p->f);
  } else if (p->mode == TS_BENCH_PROGRESS_BAR && (now - p->last_draw >= 0.1 || p->done == p->points)) {
    p->last_draw = now;
    draw_bar(p, now, what);
  }
}

void pt_progress_finish(pt_progress_t *p) {
  if (p->mode == TS_BENCH_PROGRESS_NONE) return;
  char d[32];
  ts_bench_format_duration(pt_now() - p->t0, d, sizeof d);
  if (p->mode == TS_BENCH_PROGRESS_BAR) {
    draw_bar(p, pt_now(), NULL);
    fputc('\n', p->f);
  }
  fprintf(p->f, PT_CMD ": done: %zu points in %s\n", p->done, d);
  fflush(p->f);
}
