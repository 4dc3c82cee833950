/* Unit tests for common/: status codes, arena, string map, interval tree, buffers and
 * located diagnostics (the exact text every user-input error uses). */
#include "ts_common.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void test_status(void) {
  EXPECT_EQ(ts_status_exit_code(TS_OK), 0);
  EXPECT_EQ(ts_status_exit_code(TS_ERR_CHECK_FAILED), 1);
  EXPECT_EQ(ts_status_exit_code(TS_ERR_PARSE), 2);
  EXPECT_EQ(ts_status_exit_code(TS_ERR_VERIFY), 2);
  EXPECT_EQ(ts_status_exit_code(TS_ERR_INVALID_USAGE), 2);
  EXPECT_EQ(ts_status_exit_code(TS_ERR_UNSUPPORTED), 3);
  EXPECT_STREQ(ts_status_string(TS_ERR_TIMEOUT), "timeout");
}

static void test_arena(void) {
  ts_arena_t *a = ts_arena_create();
  EXPECT(a != NULL);
  char *first = ts_arena_strdup(a, "hello");
  EXPECT_STREQ(first, "hello");
  /* Many allocations, one of them larger than a chunk: all usable, aligned, zeroed. */
  for (int k = 0; k < 10000; k++) {
    size_t n = k == 5000 ? 1 << 20 : (size_t)(k % 97) + 1;
    unsigned char *p = ts_arena_alloc(a, n);
    EXPECT(p && ((uintptr_t)p % _Alignof(max_align_t)) == 0 && p[0] == 0 && p[n - 1] == 0);
    memset(p, 0xab, n);
  }
  EXPECT_STREQ(first, "hello");
  EXPECT_STREQ(ts_arena_printf(a, "%s.%d", "add", 3), "add.3");
  EXPECT(ts_arena_bytes(a) >= (1 << 20));
  ts_arena_destroy(a);
  ts_arena_destroy(NULL);
}

static void test_strmap(void) {
  ts_strmap_t m = {0};
  char keys[3000][16];
  for (int k = 0; k < 3000; k++) {
    snprintf(keys[k], sizeof keys[k], "name.%d", k);
    EXPECT(ts_strmap_put(&m, keys[k], strlen(keys[k]), keys[k]));
  }
  EXPECT_EQ(m.count, 3000);
  for (int k = 0; k < 3000; k++) EXPECT(ts_strmap_get(&m, keys[k], strlen(keys[k])) == keys[k]);
  EXPECT(ts_strmap_get(&m, "name.3000", 9) == NULL);
  EXPECT(ts_strmap_get(&m, "name.1x", 6) == keys[1]); /* length-bounded key */
  EXPECT(ts_strmap_put(&m, keys[7], strlen(keys[7]), keys[8]));
  EXPECT(m.count == 3000 && ts_strmap_get(&m, "name.7", 6) == keys[8]);
  /* insert: adds an absent key, leaves a present one as it was */
  void *had = (void *)1;
  EXPECT(ts_strmap_insert(&m, "fresh", 5, keys[1], &had) && had == NULL);
  EXPECT(m.count == 3001 && ts_strmap_get(&m, "fresh", 5) == keys[1]);
  EXPECT(ts_strmap_insert(&m, keys[9], strlen(keys[9]), keys[2], &had) && had == keys[9]);
  EXPECT(m.count == 3001 && ts_strmap_get(&m, keys[9], strlen(keys[9])) == keys[9]);
  /* keys of every length around the 8-byte words the hash reads, and empty */
  static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (size_t n = 0; n <= 20; n++) EXPECT(ts_strmap_put(&m, text, n, (void *)(text + n)));
  for (size_t n = 0; n <= 20; n++) EXPECT(ts_strmap_get(&m, text, n) == text + n);
  EXPECT(ts_strmap_get(&m, text + 1, 8) == NULL);
  ts_strmap_free(&m);
  EXPECT(m.count == 0 && ts_strmap_get(&m, "fresh", 5) == NULL);
  /* reserve: room for n keys at once, the keys already there kept, and no
   * growth (the slot array stays where it is) until the n-th key */
  EXPECT(ts_strmap_put(&m, keys[0], strlen(keys[0]), keys[0]));
  EXPECT(ts_strmap_reserve(&m, 3000) && m.cap >= 6000 && m.count == 1);
  EXPECT(ts_strmap_get(&m, keys[0], strlen(keys[0])) == keys[0]);
  const ts_strmap_slot_t *slots = m.slots;
  size_t cap = m.cap;
  for (int k = 1; k < 3000; k++) EXPECT(ts_strmap_put(&m, keys[k], strlen(keys[k]), keys[k]));
  EXPECT(m.slots == slots && m.cap == cap && m.count == 3000);
  for (int k = 0; k < 3000; k++) EXPECT(ts_strmap_get(&m, keys[k], strlen(keys[k])) == keys[k]);
  EXPECT(ts_strmap_reserve(&m, 10) && m.cap == cap); /* never shrinks */
  ts_strmap_free(&m);
}

static void test_ptrmap(void) {
  ts_ptrmap_t m = {0};
  static int objs[5000];
  intptr_t v = -1;
  EXPECT(!ts_ptrmap_get(&m, &objs[0], &v) && v == -1);
  for (int k = 0; k < 5000; k++) EXPECT(ts_ptrmap_put(&m, &objs[k], 3 * k));
  EXPECT_EQ(m.count, 5000);
  int bad = 0;
  for (int k = 0; k < 5000; k++) bad += !ts_ptrmap_get(&m, &objs[k], &v) || v != 3 * k;
  EXPECT_EQ(bad, 0);
  EXPECT(ts_ptrmap_put(&m, &objs[17], -4) && m.count == 5000);
  EXPECT(ts_ptrmap_get(&m, &objs[17], &v) && v == -4);
  int other;
  EXPECT(!ts_ptrmap_get(&m, &other, &v));
  ts_ptrmap_free(&m);
  EXPECT(m.count == 0 && !ts_ptrmap_get(&m, &objs[1], &v));
  /* reserve, then no growth: the table stays where it is */
  EXPECT(ts_ptrmap_reserve(&m, 100));
  const void **keys = m.keys;
  for (int k = 0; k < 100; k++) EXPECT(ts_ptrmap_put(&m, &objs[k], k));
  EXPECT(m.keys == keys && m.count == 100);
  ts_ptrmap_free(&m);
}

static void test_buf(void) {
  ts_buf_t b = {0};
  ts_buf_puts(&b, "a");
  ts_buf_printf(&b, "%d-%s", 42, "x");
  char big[300];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ts_buf_printf(&b, "%s", big); /* longer than the printf fast path */
  EXPECT(b.len == 5 + 299 && strncmp(b.data, "a42-x", 5) == 0 && b.data[b.len] == '\0');
  ts_buf_free(&b);
  EXPECT(b.data == NULL && b.len == 0);
}

static void test_diag(void) {
  const char *text = "HloModule m\n\nENTRY e {\n\tx = f32[] addd(y)\n}\n";
  ts_source_t src = {"m.hlo", text, strlen(text)};
  ts_diag_t d = {0};
  ts_diag_error(&d, &src, (ts_loc_t){4, 12}, "unknown opcode '%s'", "addd");
  ts_diag_error(&d, &src, (ts_loc_t){1, 1}, "second error is counted, not kept");
  EXPECT_EQ(d.count, 2);
  EXPECT(d.text && strcmp(d.text,
                          "m.hlo:4:12: error: unknown opcode 'addd'\n"
                          "\tx = f32[] addd(y)\n"
                          "\t          ^\n") == 0);
  ts_diag_free(&d);
  ts_diag_plain(&d, "no module file given");
  EXPECT(d.text && strcmp(d.text, "error: no module file given\n") == 0);
  ts_diag_free(&d);
  /* A very long line is cut to a window around the caret. */
  char long_text[1200];
  memset(long_text, 'a', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  long_text[600] = 'X';
  ts_source_t long_src = {"long.hlo", long_text, strlen(long_text)};
  ts_diag_error(&d, &long_src, (ts_loc_t){1, 601}, "here");
  char want[400];
  snprintf(want, sizeof want, "long.hlo:1:601: error: here\n...%.80sX%.79s...\n%83s^\n", long_text, long_text, "");
  EXPECT(d.text && strcmp(d.text, want) == 0);
  ts_diag_free(&d);
  /* A location past the end of the text still prints, without reading out of bounds. */
  ts_diag_error(&d, &src, (ts_loc_t){40, 3}, "past the end");
  EXPECT(d.text && strncmp(d.text, "m.hlo:40:3: error: past the end\n", 32) == 0);
  ts_diag_free(&d);
}

/* Sorts a few ids (insertion sort) so that a query's answer compares as a set. */
static void sort_ids(int *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      int x = v[j];
      v[j] = v[j - 1], v[j - 1] = x;
    }
}

static void test_interval_tree(void) {
  /* By hand, over positions 0..9 (not a power of two: the last leaves are unused). */
  ts_interval_tree_t *t = NULL;
  EXPECT_EQ(ts_interval_tree_create(10, 4, &t), TS_OK);
  int out[64];
  EXPECT_EQ(ts_interval_tree_query(t, 0, 9, out), 0);
  EXPECT_EQ(ts_interval_tree_insert(t, 2, 5, 0), TS_OK);
  EXPECT_EQ(ts_interval_tree_insert(t, 6, 6, 1), TS_OK);
  EXPECT_EQ(ts_interval_tree_insert(t, 0, 9, 2), TS_OK);
  EXPECT_EQ(ts_interval_tree_insert(t, 9, 9, 3), TS_OK);
  int n = ts_interval_tree_query(t, 5, 6, out); /* closed: meets 0 at 5, 1 at 6, and 2 */
  sort_ids(out, n);
  EXPECT_EQ(n, 3);
  EXPECT(n == 3 && out[0] == 0 && out[1] == 1 && out[2] == 2);
  n = ts_interval_tree_query(t, 7, 8, out); /* only the one over everything */
  EXPECT_EQ(n, 1);
  EXPECT_EQ(out[0], 2);
  n = ts_interval_tree_query(t, 0, 1, out);
  EXPECT(n == 1 && out[0] == 2);
  n = ts_interval_tree_query(t, 3, 9, out); /* 2 spans many nodes of [3, 9] but comes back once */
  sort_ids(out, n);
  EXPECT(n == 4 && out[0] == 0 && out[1] == 1 && out[2] == 2 && out[3] == 3);
  ts_interval_tree_destroy(t);
  ts_interval_tree_destroy(NULL);

  /* Random intervals against the plain scan: every query returns exactly the
   * overlapping ids, each once. */
  enum { NPOS = 1000, NIDS = 600 };
  static int lo[NIDS], hi[NIDS], got[NIDS], seen[NIDS];
  EXPECT_EQ(ts_interval_tree_create(NPOS, NIDS, &t), TS_OK);
  uint32_t x = 12345;
  int bad = 0;
  for (int id = 0; id < NIDS; id++) {
    x = x * 1664525u + 1013904223u;
    lo[id] = (int)((x >> 8) % NPOS);
    x = x * 1664525u + 1013904223u;
    int len = (x >> 8) % 4 == 0 ? (int)((x >> 12) % NPOS) : (int)((x >> 12) % 20);
    hi[id] = lo[id] + len < NPOS ? lo[id] + len : NPOS - 1;
    EXPECT_EQ(ts_interval_tree_insert(t, lo[id], hi[id], id), TS_OK);
    x = x * 1664525u + 1013904223u;
    int a = (int)((x >> 8) % NPOS), b = a + (int)((x >> 16) % 50);
    if (b >= NPOS) b = NPOS - 1;
    int ng = ts_interval_tree_query(t, a, b, got);
    for (int k = 0; k <= id; k++) seen[k] = 0;
    for (int k = 0; k < ng; k++) {
      if (got[k] < 0 || got[k] > id || seen[got[k]]++) bad++; /* out of range or twice */
    }
    int want = 0;
    for (int k = 0; k <= id; k++) {
      bool meets = lo[k] <= b && a <= hi[k];
      want += meets;
      if (meets != (seen[k] == 1)) bad++;
    }
    EXPECT_EQ(ng, want);
  }
  EXPECT_EQ(bad, 0);
  ts_interval_tree_destroy(t);
}

/* Writes n bytes of a repeating pattern to a temporary file; its path into
 * path (mkstemp template). False on failure. */
static bool pattern_file(char *path, size_t n) {
  int fd = mkstemp(path);
  if (fd < 0) return false;
  FILE *f = fdopen(fd, "wb");
  bool ok = f != NULL;
  for (size_t k = 0; ok && k < n; k++) ok = fputc('a' + (int)(k % 23), f) != EOF;
  if (f) ok = fclose(f) == 0 && ok;
  return ok;
}

/* ts_text_load: a big file mapped, a whole number of pages or a small file
 * read, each the file's bytes with a NUL after them; a missing file named. */
static void test_text(void) {
  long page = sysconf(_SC_PAGESIZE);
  const struct {
    size_t n;
    bool mapped;
  } sizes[] = {{((size_t)16 << 20) + 3, true}, {(size_t)16 << 20, false}, {100, false}, {0, false}};
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
    char path[] = "/tmp/ts_text_XXXXXX";
    if (!pattern_file(path, sizes[c].n)) {
      EXPECT(!"cannot write a temporary file");
      continue;
    }
    ts_text_t t;
    ts_diag_t d = {0};
    EXPECT_EQ(ts_text_load(path, &t, &d), TS_OK);
    EXPECT_EQ(t.len, sizes[c].n);
    EXPECT(t.mapped == (sizes[c].mapped && page > 0 && sizes[c].n % (size_t)page != 0));
    size_t bad = 0;
    for (size_t k = 0; t.data && k < t.len; k++) bad += t.data[k] != 'a' + (int)(k % 23);
    EXPECT_EQ(bad, 0);
    EXPECT(t.data && t.data[t.len] == '\0');
    ts_text_free(&t);
    EXPECT(t.data == NULL && !t.mapped);
    unlink(path);
    ts_diag_free(&d);
  }
  ts_text_t t;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_text_load("/nonexistent/ts_text", &t, &d), TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strstr(d.text, "cannot open '/nonexistent/ts_text'"));
  ts_diag_free(&d);
  ts_text_free(&t);
}

static const ts_test_case_t cases[] = {
    {"text", test_text},
    {"status", test_status},
    {"arena", test_arena},
    {"strmap", test_strmap},
    {"ptrmap", test_ptrmap},
    {"buf", test_buf},
    {"diag", test_diag},
    {"interval_tree", test_interval_tree},
};

int main(int argc, char **argv) {
  return ts_test_cases("test_common", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
