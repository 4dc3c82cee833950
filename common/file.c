/* Whole-file reads and atomic writes: the one place user files are opened. */
#include "ts_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ts_status_t ts_read_file(const char *path, char **out, size_t *out_len, ts_diag_t *diag) {
  bool is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    ts_diag_plain(diag, "cannot open '%s': %s", path, strerror(errno));
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_buf_t b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ts_buf_append(&b, chunk, n);
  int read_errno = ferror(f) ? errno : 0;
  if (!is_stdin) fclose(f);
  if (read_errno) { /* e.g. a directory: the user named the wrong thing */
    ts_buf_free(&b);
    ts_diag_plain(diag, "cannot read '%s': %s", path, strerror(read_errno));
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (b.oom) {
    ts_buf_free(&b);
    ts_diag_plain(diag, "out of memory reading '%s'", path);
    return TS_ERR_NOMEM;
  }
  if (!b.data) ts_buf_append(&b, "", 0);
  if (!b.data) return TS_ERR_NOMEM;
  *out = b.data;
  *out_len = b.len;
  return TS_OK;
}

ts_status_t ts_atomic_file_open(ts_atomic_file_t *af, const char *path, ts_diag_t *diag) {
  memset(af, 0, sizeof *af);
  size_t plen = strlen(path);
  af->path = ts_strdup(path);
  af->tmp = ts_malloc(plen + sizeof ".tmp.XXXXXX");
  if (!af->path || !af->tmp) {
    ts_free(af->path);
    ts_free(af->tmp);
    return TS_ERR_NOMEM;
  }
  memcpy(af->tmp, path, plen);
  memcpy(af->tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  int fd = mkstemp(af->tmp);
  if (fd >= 0) {
    (void)fchmod(fd, 0644); /* mkstemp makes 0600; outputs are meant to be shared */
    af->f = fdopen(fd, "wb");
    if (!af->f) {
      int e = errno;
      close(fd);
      unlink(af->tmp);
      errno = e;
    }
  }
  if (!af->f) {
    ts_status_t st = ts_diag_path_error(diag, path, TS_ERR_SYSTEM, "cannot create '%s': %s", af->tmp, strerror(errno));
    ts_free(af->path);
    ts_free(af->tmp);
    memset(af, 0, sizeof *af);
    return st;
  }
  return TS_OK;
}

ts_status_t ts_atomic_file_close(ts_atomic_file_t *af, bool commit, ts_diag_t *diag) {
  if (!af->f) return TS_OK;
  ts_status_t st = TS_OK;
  bool failed = ferror(af->f);
  int err = errno;
  if (fclose(af->f) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  if (commit && failed)
    st = ts_diag_path_error(diag, af->path, TS_ERR_SYSTEM, "cannot write '%s': %s", af->tmp, strerror(err));
  else if (commit && rename(af->tmp, af->path) != 0)
    st = ts_diag_path_error(diag, af->path, TS_ERR_SYSTEM, "cannot rename '%s' to '%s': %s", af->tmp, af->path,
                    strerror(errno));
  if (!commit || st != TS_OK) unlink(af->tmp);
  ts_free(af->path);
  ts_free(af->tmp);
  memset(af, 0, sizeof *af);
  return st;
}

ts_status_t ts_write_file_atomic(const char *path, const void *data, size_t len, ts_diag_t *diag) {
  ts_atomic_file_t af;
  TS_CHECK(ts_atomic_file_open(&af, path, diag));
  fwrite(data, 1, len, af.f); /* a short write sets the error flag close reports */
  return ts_atomic_file_close(&af, true, diag);
}
