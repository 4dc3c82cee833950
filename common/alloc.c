/* Allocation hooks, the arena and the string buffer. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "ts_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *libc_malloc(size_t n, void *ctx) { (void)ctx; return malloc(n); }
static void *libc_realloc(void *p, size_t n, void *ctx) { (void)ctx; return realloc(p, n); }
static void libc_free(void *p, void *ctx) { (void)ctx; free(p); }

static ts_allocator_t g_alloc = {libc_malloc, libc_realloc, libc_free, NULL};

void ts_set_allocator(const ts_allocator_t *a) {
  static const ts_allocator_t libc = {libc_malloc, libc_realloc, libc_free, NULL};
  g_alloc = a ? *a : libc;
}

void *ts_malloc(size_t size) { return g_alloc.malloc_fn(size ? size : 1, g_alloc.ctx); }
void *ts_realloc(void *p, size_t size) { return g_alloc.realloc_fn(p, size ? size : 1, g_alloc.ctx); }
void ts_free(void *p) { if (p) g_alloc.free_fn(p, g_alloc.ctx); }

/* Big blocks that are written whole (arena chunks, hash tables) ask for
 * transparent huge pages: a 1M-instruction compile otherwise spends a third
 * of its time in 4 KiB page faults. Advice only: where THP is off (or the
 * kernel says no) nothing changes. */
enum { HUGE_PAGE = 2 << 20 };

static void advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  if (n < 2 * (size_t)HUGE_PAGE) return;
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

void *ts_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  if (g_alloc.malloc_fn == libc_malloc) {
    /* libc's calloc knows fresh pages are zero: a big table's untouched
     * part costs nothing, where malloc + memset would fault it all in. */
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p) advise_huge(p, n * size);
    return p;
  }
  void *p = ts_malloc(n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

char *ts_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ts_malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* ---- arena: a list of chunks, bump allocation inside the newest one ---- */

typedef struct chunk {
  struct chunk *next;
  size_t used, size;
  max_align_t data[];
} chunk_t;

struct ts_arena {
  chunk_t *head;
  size_t reserved;
};

enum { CHUNK_MIN = 64 * 1024 };

ts_arena_t *ts_arena_create(void) { return ts_calloc(1, sizeof(ts_arena_t)); }

void ts_arena_destroy(ts_arena_t *a) {
  if (!a) return;
  for (chunk_t *c = a->head, *next; c; c = next) {
    next = c->next;
    ts_free(c);
  }
  ts_free(a);
}

void *ts_arena_alloc(ts_arena_t *a, size_t size) {
  const size_t align = _Alignof(max_align_t);
  size = (size + align - 1) & ~(align - 1);
  if (size == 0) size = align;
  chunk_t *c = a->head;
  if (!c || c->size - c->used < size) {
    if (size > SIZE_MAX / 2) return NULL;
    size_t want = size > CHUNK_MIN ? size : CHUNK_MIN;
    /* Grow chunk sizes with the arena so big modules take few mallocs. */
    if (a->reserved / 4 > want) want = a->reserved / 4;
    c = ts_malloc(sizeof(chunk_t) + want);
    if (!c) return NULL;
    advise_huge(c, sizeof(chunk_t) + want);
    c->used = 0;
    c->size = want;
    c->next = a->head;
    a->head = c;
    a->reserved += want;
  }
  void *p = (char *)c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *ts_arena_strndup(ts_arena_t *a, const char *s, size_t n) {
  char *p = ts_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *ts_arena_strdup(ts_arena_t *a, const char *s) { return ts_arena_strndup(a, s, strlen(s)); }

char *ts_arena_printf(ts_arena_t *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *p = ts_arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

size_t ts_arena_bytes(const ts_arena_t *a) { return a->reserved; }

/* ---- string buffer ---- */

static bool buf_reserve(ts_buf_t *b, size_t extra) {
  if (b->oom) return false;
  if (b->len + extra + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) {
    if (cap > SIZE_MAX / 2) { b->oom = true; return false; }
    cap *= 2;
  }
  char *p = ts_realloc(b->data, cap);
  if (!p) { b->oom = true; return false; }
  b->data = p;
  b->cap = cap;
  return true;
}

void ts_buf_append(ts_buf_t *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void ts_buf_puts(ts_buf_t *b, const char *s) { ts_buf_append(b, s, strlen(s)); }

void ts_buf_putc(ts_buf_t *b, char c) {
  if (!buf_reserve(b, 1)) return;
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}

void ts_buf_vprintf(ts_buf_t *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[128];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  if ((size_t)n < sizeof small) { ts_buf_append(b, small, (size_t)n); return; }
  if (!buf_reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void ts_buf_printf(ts_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void ts_buf_free(ts_buf_t *b) {
  ts_free(b->data);
  memset(b, 0, sizeof *b);
}
