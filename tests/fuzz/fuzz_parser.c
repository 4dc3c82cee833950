/* libFuzzer target for the HLO text parser. Any input that parses must
 * survive the verifier and print, and the printed text must be a fixed point:
 * parse(print(m)) succeeds and prints the same text again (ts_hlo.h's
 * contract for ts_hlo_print). Built only with TESSERA_FUZZ=ON and clang;
 * run it with scripts/fuzz.sh. */
#include "ts_hlo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the first line where two printed texts differ, for the crash log. */
static void report_first_difference(const ts_buf_t *a, const ts_buf_t *b) {
  size_t i = 0, line_start = 0;
  int line = 1;
  while (i < a->len && i < b->len && a->data[i] == b->data[i]) {
    if (a->data[i] == '\n') {
      line++;
      line_start = i + 1;
    }
    i++;
  }
  const char *ea = memchr(a->data + line_start, '\n', a->len - line_start);
  const char *eb = memchr(b->data + line_start, '\n', b->len - line_start);
  int na = (int)((ea ? (size_t)(ea - a->data) : a->len) - line_start);
  int nb = (int)((eb ? (size_t)(eb - b->data) : b->len) - line_start);
  fprintf(stderr, "printed texts differ at line %d:\n  first:  %.*s\n  second: %.*s\n", line, na,
          a->data + line_start, nb, b->data + line_start);
}

/* The library must explain every user-input error it returns. */
static void check_error_contract(const char *what, ts_status_t st, ts_status_t expected,
                                 const ts_diag_t *diag) {
  if (st == TS_OK || st == TS_ERR_NOMEM) return;
  if (st != expected) {
    fprintf(stderr, "%s returned %d (%s), want TS_OK or %d\n", what, (int)st,
            ts_status_string(st), (int)expected);
    abort();
  }
  if (!diag->text) {
    fprintf(stderr, "%s failed (%s) without a diagnostic\n", what, ts_status_string(st));
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The parser is handed a NUL-terminated copy, as ts_read_file gives it. */
  char *text = malloc(size + 1);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  text[size] = '\0';

  ts_source_t src = {"fuzz.hlo", text, size};
  ts_diag_t diag = {0}, vdiag = {0}, diag2 = {0};
  ts_hlo_module_t *m = NULL, *m2 = NULL;
  ts_buf_t first = {0}, second = {0};

  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &diag);
  check_error_contract("ts_hlo_parse", st, TS_ERR_PARSE, &diag);
  if (st != TS_OK) {
    if (m) {
      fprintf(stderr, "ts_hlo_parse failed but returned a module\n");
      abort();
    }
    goto done;
  }

  st = ts_hlo_verify(m, NULL, &vdiag);
  check_error_contract("ts_hlo_verify", st, TS_ERR_VERIFY, &vdiag);

  if (ts_hlo_print(m, &first) != TS_OK || first.oom) goto done;

  ts_source_t printed = {"printed.hlo", first.data ? first.data : "", first.len};
  st = ts_hlo_parse(&printed, NULL, &m2, &diag2);
  if (st == TS_ERR_NOMEM) goto done;
  if (st != TS_OK) {
    fprintf(stderr, "the printed module does not parse again:\n%s\n--- printed text ---\n%s\n",
            diag2.text ? diag2.text : ts_status_string(st), first.data ? first.data : "");
    abort();
  }
  if (ts_hlo_print(m2, &second) != TS_OK || second.oom) goto done;
  if (first.len != second.len || (first.len && memcmp(first.data, second.data, first.len) != 0)) {
    report_first_difference(&first, &second);
    abort();
  }

done:
  ts_buf_free(&second);
  ts_buf_free(&first);
  ts_hlo_module_destroy(m2);
  ts_hlo_module_destroy(m);
  ts_diag_free(&diag2);
  ts_diag_free(&vdiag);
  ts_diag_free(&diag);
  free(text);
  return 0;
}
