/* Unit tests for common/: status codes, arena, string map, buffers and
 * located diagnostics (the exact text every user-input error uses). */
#include "ts_common.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>


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
  ts_strmap_free(&m);
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

static const ts_test_case_t cases[] = {
    {"status", test_status},
    {"arena", test_arena},
    {"strmap", test_strmap},
    {"buf", test_buf},
    {"diag", test_diag},
};

int main(int argc, char **argv) {
  return ts_test_cases("test_common", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
