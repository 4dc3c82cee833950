/* Whole-file reads and atomic writes: the one place user files are opened. */
#define _GNU_SOURCE /* renameat2 */
#include "ts_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A regular file of known size in one exact allocation, read with read(2):
 * no doubling copies and no stdio buffer between the page cache and the
 * text. Returns false (nothing allocated, nothing reported) where the size
 * cannot be trusted, e.g. a pipe or a file that grew while read. */
static bool read_sized(FILE *f, char **out, size_t *out_len, int *err) {
  struct stat st;
  int fd = fileno(f);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return false;
  size_t size = (size_t)st.st_size, got = 0;
  char *p = ts_malloc(size + 1);
  if (!p) return false;
  while (got < size) {
    ssize_t n = read(fd, p + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *err = errno;
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (*err || got != size) { /* a short read: let the stream loop decide */
    ts_free(p);
    if (!*err) (void)lseek(fd, 0, SEEK_SET);
    return false;
  }
  p[size] = '\0';
  *out = p;
  *out_len = size;
  return true;
}

ts_status_t ts_read_file(const char *path, char **out, size_t *out_len, ts_diag_t *diag) {
  bool is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    ts_diag_plain(diag, "cannot open '%s': %s", path, strerror(errno));
    return TS_ERR_INVALID_ARGUMENT;
  }
  int read_errno = 0;
  if (!is_stdin && read_sized(f, out, out_len, &read_errno)) {
    fclose(f);
    return TS_OK;
  }
  ts_buf_t b = {0};
  char chunk[65536];
  size_t n;
  while (!read_errno && (n = fread(chunk, 1, sizeof chunk, f)) > 0) ts_buf_append(&b, chunk, n);
  if (!read_errno && ferror(f)) read_errno = errno;
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

/* Mapped only from this size: below it a read costs less than a mapping. */
#define MAP_MIN_BYTES ((size_t)16 << 20)

ts_status_t ts_text_load(const char *path, ts_text_t *t, ts_diag_t *diag) {
  memset(t, 0, sizeof *t);
  struct stat st;
  long page = sysconf(_SC_PAGESIZE);
  int fd = strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
  /* The page cache's own pages instead of fresh ones filled by read(2):
   * beyond the end of the file the last page reads as zeros, which is the
   * text's terminating NUL, so a size that is a whole number of pages reads
   * instead. (As with any mapping, a file truncated while mapped faults.) */
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= MAP_MIN_BYTES && page > 0 &&
      st.st_size % page != 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      close(fd);
      t->data = m;
      t->len = (size_t)st.st_size;
      t->mapped = true;
      return TS_OK;
    }
  }
  if (fd >= 0) close(fd);
  return ts_read_file(path, &t->data, &t->len, diag);
}

void ts_text_free(ts_text_t *t) {
  if (t->mapped) munmap(t->data, t->len);
  else ts_free(t->data);
  memset(t, 0, sizeof *t);
}

/* "No space left on device (ENOSPC)": the text for people, the name for
 * the ones who grep logs and man pages. */
static const char *errno_text(int e, char *buf, size_t size) {
  static const struct {
    int e;
    const char *name;
  } names[] = {{ENOSPC, "ENOSPC"}, {EDQUOT, "EDQUOT"}, {EROFS, "EROFS"},   {EACCES, "EACCES"},
               {EPERM, "EPERM"},   {EIO, "EIO"},       {EFBIG, "EFBIG"},   {ENOENT, "ENOENT"},
               {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"}, {ENXIO, "ENXIO"}, {EPIPE, "EPIPE"}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (names[k].e == e) {
      snprintf(buf, size, "%s (%s)", strerror(e), names[k].name);
      return buf;
    }
  snprintf(buf, size, "%s", strerror(e));
  return buf;
}

static char *join(const char *a, const char *b, const char *c) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
  char *s = ts_malloc(la + lb + lc + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, b, lb);
  memcpy(s + la + lb, c, lc + 1);
  return s;
}

/* The folder part of path ("." when it has none); owned by the caller. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ts_strdup(".");
  if (slash == path) return ts_strdup("/");
  char *d = ts_malloc((size_t)(slash - path) + 1);
  if (!d) return NULL;
  memcpy(d, path, (size_t)(slash - path));
  d[slash - path] = 0;
  return d;
}

/* Follows symbolic links in the last component of path: the file a write
 * to path lands in (the link's target, existing or not). Owned by the
 * caller; NULL on out of memory or a loop (errno ELOOP). */
static char *resolve_links(const char *path) {
  char *cur = ts_strdup(path);
  for (int hops = 0; cur && hops < 40; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) return cur;
    char link[4096];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0) return cur;
    link[n] = 0;
    char *next;
    if (link[0] == '/') {
      next = ts_strdup(link);
    } else {
      char *d = dir_of(cur);
      next = d ? join(d, "/", link) : NULL;
      ts_free(d);
    }
    ts_free(cur);
    cur = next;
  }
  if (cur) {
    ts_free(cur);
    errno = ELOOP;
  }
  return NULL;
}

/* In place (no rename): a device or a FIFO, where a rename would replace
 * the node, and the files of a file set's staging folder. */
static bool in_place(const struct stat *sb) { return !S_ISREG(sb->st_mode) && !S_ISDIR(sb->st_mode); }

static ts_status_t open_at(ts_atomic_file_t *af, const char *path, const char *file, bool rename_over,
                           ts_diag_t *diag) {
  char ebuf[128];
  memset(af, 0, sizeof *af);
  af->path = ts_strdup(path);
  af->target = ts_strdup(file);
  if (!af->path || !af->target) goto nomem;
  struct stat sb;
  bool exists = stat(file, &sb) == 0;
  if (exists && S_ISDIR(sb.st_mode)) {
    ts_status_t st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write: it is a folder");
    ts_free(af->path);
    ts_free(af->target);
    memset(af, 0, sizeof *af);
    return st;
  }
  int fd;
  if (!rename_over || (exists && in_place(&sb))) {
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } else {
    af->tmp = join(file, ".tmp.XXXXXX", "");
    if (!af->tmp) goto nomem;
    fd = mkstemp(af->tmp);
    /* mkstemp makes 0600: a replaced file keeps its mode, a new one is shared */
    if (fd >= 0) (void)fchmod(fd, exists ? (sb.st_mode & 07777) : 0644);
  }
  if (fd >= 0) {
    af->f = fdopen(fd, "wb");
    if (!af->f) {
      int e = errno;
      close(fd);
      if (af->tmp) unlink(af->tmp);
      errno = e;
    }
  }
  if (!af->f) {
    ts_status_t st = ts_diag_path_error(diag, path, TS_ERR_SYSTEM, "cannot create '%s': %s",
                                        af->tmp ? af->tmp : file, errno_text(errno, ebuf, sizeof ebuf));
    ts_free(af->path);
    ts_free(af->target);
    ts_free(af->tmp);
    memset(af, 0, sizeof *af);
    return st;
  }
  return TS_OK;
nomem:
  ts_free(af->path);
  ts_free(af->target);
  memset(af, 0, sizeof *af);
  return TS_ERR_NOMEM;
}

ts_status_t ts_atomic_file_open(ts_atomic_file_t *af, const char *path, ts_diag_t *diag) {
  char *file = resolve_links(path);
  if (!file) {
    if (errno != ELOOP) return TS_ERR_NOMEM;
    char ebuf[128];
    return ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write: %s",
                              errno_text(ELOOP, ebuf, sizeof ebuf));
  }
  ts_status_t st = open_at(af, path, file, true, diag);
  ts_free(file);
  return st;
}

ts_status_t ts_atomic_file_close(ts_atomic_file_t *af, bool commit, ts_diag_t *diag) {
  if (!af->f) return TS_OK;
  char ebuf[128];
  ts_status_t st = TS_OK;
  /* The first failure's errno: a failed fwrite left it, or the flush sets it. */
  int err = ferror(af->f) ? (errno ? errno : EIO) : 0;
  if (!err && fflush(af->f) != 0) err = errno;
  if (fclose(af->f) != 0 && !err) err = errno;
  if (commit && err)
    st = ts_diag_path_error(diag, af->path, TS_ERR_SYSTEM, "cannot write: %s", errno_text(err, ebuf, sizeof ebuf));
  else if (commit && af->tmp && rename(af->tmp, af->target) != 0)
    st = ts_diag_path_error(diag, af->path, TS_ERR_SYSTEM, "cannot rename '%s' to '%s': %s", af->tmp, af->target,
                            errno_text(errno, ebuf, sizeof ebuf));
  if (af->tmp && (!commit || st != TS_OK)) unlink(af->tmp);
  ts_free(af->path);
  ts_free(af->target);
  ts_free(af->tmp);
  memset(af, 0, sizeof *af);
  return st;
}

ts_status_t ts_write_file_atomic(const char *path, const void *data, size_t len, ts_diag_t *diag) {
  ts_atomic_file_t af;
  TS_CHECK(ts_atomic_file_open(&af, path, diag));
  errno = 0;
  fwrite(data, 1, len, af.f); /* a short write sets the error flag close reports */
  return ts_atomic_file_close(&af, true, diag);
}

/* Creates and removes a file in folder `dir`: whether writes there will
 * work, asked of the file system itself (access() says yes to root on a
 * folder without write permission, and knows nothing of full disks). */
static ts_status_t probe_folder(const char *shown, const char *dir, ts_diag_t *diag) {
  char ebuf[128];
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return ts_diag_path_error(diag, shown, TS_ERR_INVALID_ARGUMENT, "cannot write: folder '%s': %s", dir,
                              errno_text(errno, ebuf, sizeof ebuf));
  if (!S_ISDIR(sb.st_mode))
    return ts_diag_path_error(diag, shown, TS_ERR_INVALID_ARGUMENT, "cannot write: '%s' is not a folder", dir);
  char *probe = join(dir, "/.tessera-probe.XXXXXX", "");
  if (!probe) return TS_ERR_NOMEM;
  int fd = mkstemp(probe);
  ts_status_t st = TS_OK;
  if (fd < 0) {
    st = ts_diag_path_error(diag, shown, TS_ERR_INVALID_ARGUMENT, "cannot write in '%s': %s", dir,
                            errno_text(errno, ebuf, sizeof ebuf));
  } else {
    close(fd);
    unlink(probe);
  }
  ts_free(probe);
  return st;
}

ts_status_t ts_file_check_writable(const char *path, ts_diag_t *diag) {
  if (!path || strcmp(path, "-") == 0) return TS_OK;
  char ebuf[128];
  char *file = resolve_links(path);
  if (!file)
    return errno == ELOOP ? ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write: %s",
                                               errno_text(ELOOP, ebuf, sizeof ebuf))
                          : TS_ERR_NOMEM;
  ts_status_t st = TS_OK;
  struct stat sb;
  if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write: it is a folder");
  } else if (stat(file, &sb) == 0 && in_place(&sb)) {
    if (access(file, W_OK) != 0)
      st = ts_diag_path_error(diag, path, TS_ERR_INVALID_ARGUMENT, "cannot write: %s",
                              errno_text(errno, ebuf, sizeof ebuf));
  } else {
    char *dir = dir_of(file);
    st = dir ? probe_folder(path, dir, diag) : TS_ERR_NOMEM;
    ts_free(dir);
  }
  ts_free(file);
  return st;
}

/* ---- file sets ------------------------------------------------------------ */

/* Removes a staging folder and the files in it (it holds no folders). */
static void remove_flat(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *p = join(dir, "/", e->d_name);
      if (p) unlink(p);
      ts_free(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Whether folder `dir` holds nothing but members of the set. */
static bool only_members(const char *dir, bool (*member)(const char *name)) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool only = true;
  struct dirent *e;
  while (only && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && !member(e->d_name)) only = false;
  closedir(d);
  return only;
}

static const char *base_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

ts_status_t ts_file_set_check(const char *dir, ts_diag_t *diag) {
  if (!dir) return TS_OK;
  struct stat sb;
  if (stat(dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode))
      return ts_diag_path_error(diag, dir, TS_ERR_INVALID_ARGUMENT, "cannot write outputs here: not a folder");
    return probe_folder(dir, dir, diag);
  }
  char *file = resolve_links(dir);
  char *parent = file ? dir_of(file) : NULL;
  ts_status_t st = parent ? probe_folder(dir, parent, diag) : TS_ERR_NOMEM;
  ts_free(parent);
  ts_free(file);
  return st;
}

ts_status_t ts_file_set_open(ts_file_set_t *s, const char *dir, bool (*member)(const char *name), ts_diag_t *diag) {
  char ebuf[128];
  memset(s, 0, sizeof *s);
  s->member = member;
  s->dir = ts_strdup(dir);
  if (!s->dir) goto nomem;
  for (size_t n = strlen(s->dir); n > 1 && s->dir[n - 1] == '/'; n--) s->dir[n - 1] = 0;
  s->target = resolve_links(s->dir); /* a link to a folder: the link stays, the folder behind it gets the set */
  if (!s->target) goto nomem;
  struct stat sb = {0}, pb = {0};
  s->exists = stat(s->target, &sb) == 0;
  if (s->exists && !S_ISDIR(sb.st_mode)) {
    ts_status_t st = ts_diag_path_error(diag, dir, TS_ERR_INVALID_ARGUMENT, "cannot write outputs here: not a folder");
    ts_file_set_close(s, false, NULL);
    return st;
  }
  char *parent = dir_of(s->target);
  if (!parent) goto nomem;
  /* Staged beside the folder, to swap with it whole, when the folder holds
   * nothing else and the two are on one file system (a mount point is
   * not); else inside it, to move in file by file. */
  bool beside = !s->exists || (stat(parent, &pb) == 0 && pb.st_dev == sb.st_dev && pb.st_ino != sb.st_ino &&
                               only_members(s->target, member));
  if (beside) {
    char *pattern = join(parent, "/.", base_of(s->target));
    s->stage = pattern ? join(pattern, ".tmp.XXXXXX", "") : NULL;
    ts_free(pattern);
    if (s->stage && !mkdtemp(s->stage)) {
      ts_free(s->stage);
      s->stage = NULL;
      if (!s->exists) {
        ts_status_t st = ts_diag_path_error(diag, dir, TS_ERR_SYSTEM, "cannot create the output folder: %s",
                                            errno_text(errno, ebuf, sizeof ebuf));
        ts_free(parent);
        ts_file_set_close(s, false, NULL);
        return st;
      }
      beside = false; /* a folder we may write in, in a parent we may not */
    } else if (!s->stage) {
      ts_free(parent);
      goto nomem;
    }
  }
  ts_free(parent);
  if (!beside) {
    s->inside = true;
    s->stage = join(s->target, "/.tessera-outputs.tmp.XXXXXX", "");
    if (!s->stage) goto nomem;
    if (!mkdtemp(s->stage)) {
      ts_free(s->stage);
      s->stage = NULL;
      ts_status_t st = ts_diag_path_error(diag, dir, TS_ERR_SYSTEM, "cannot write in the output folder: %s",
                                          errno_text(errno, ebuf, sizeof ebuf));
      ts_file_set_close(s, false, NULL);
      return st;
    }
  }
  s->mode = s->exists ? (sb.st_mode & 07777) : 0;
  return TS_OK;
nomem:
  ts_file_set_close(s, false, NULL);
  return TS_ERR_NOMEM;
}

static ts_status_t add_name(ts_file_set_t *s, const char *name) {
  if (s->nnames == s->names_cap) {
    int cap = s->names_cap ? 2 * s->names_cap : 16;
    char **n = ts_realloc(s->names, (size_t)cap * sizeof *n);
    if (!n) return TS_ERR_NOMEM;
    s->names = n;
    s->names_cap = cap;
  }
  if (!(s->names[s->nnames] = ts_strdup(name))) return TS_ERR_NOMEM;
  s->nnames++;
  return TS_OK;
}

ts_status_t ts_file_set_file(ts_file_set_t *s, const char *name, ts_atomic_file_t *af, ts_diag_t *diag) {
  char *shown = join(s->dir, "/", name), *file = join(s->stage, "/", name);
  ts_status_t st = shown && file ? open_at(af, shown, file, false, diag) : TS_ERR_NOMEM;
  if (st == TS_OK && (st = add_name(s, name)) != TS_OK) ts_atomic_file_close(af, false, NULL);
  ts_free(shown);
  ts_free(file);
  return st;
}

/* Moves every staged file into the folder, then removes the members the
 * new set lacks: a write error cannot get here, only a crash between two
 * renames could leave a mix. */
static ts_status_t move_in(ts_file_set_t *s, ts_diag_t *diag) {
  char ebuf[128];
  ts_status_t st = TS_OK;
  DIR *d = opendir(s->stage);
  if (!d) return ts_diag_path_error(diag, s->dir, TS_ERR_SYSTEM, "cannot read '%s': %s", s->stage,
                                    errno_text(errno, ebuf, sizeof ebuf));
  struct dirent *e;
  while (st == TS_OK && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *from = join(s->stage, "/", e->d_name), *to = join(s->target, "/", e->d_name);
    if (!from || !to) st = TS_ERR_NOMEM;
    else if (rename(from, to) != 0)
      st = ts_diag_path_error(diag, s->dir, TS_ERR_SYSTEM, "cannot rename '%s' to '%s': %s", from, to,
                              errno_text(errno, ebuf, sizeof ebuf));
    ts_free(from);
    ts_free(to);
  }
  closedir(d);
  if (st != TS_OK) return st;
  /* Stale members: those not staged (staged ones were just renamed over). */
  d = opendir(s->target);
  while (d && (e = readdir(d)) != NULL) {
    if (!s->member(e->d_name)) continue;
    bool staged = false;
    for (int k = 0; k < s->nnames && !staged; k++) staged = strcmp(s->names[k], e->d_name) == 0;
    if (staged) continue;
    char *p = join(s->target, "/", e->d_name);
    if (p) unlink(p);
    ts_free(p);
  }
  if (d) closedir(d);
  return TS_OK;
}

ts_status_t ts_file_set_close(ts_file_set_t *s, bool commit, ts_diag_t *diag) {
  char ebuf[128];
  ts_status_t st = TS_OK;
  if (commit && s->stage) {
    if (s->inside) {
      st = move_in(s, diag);
    } else if (!s->exists) {
      mode_t mask = umask(0);
      umask(mask);
      (void)chmod(s->stage, 0777 & ~mask);
      if (rename(s->stage, s->target) != 0)
        st = ts_diag_path_error(diag, s->dir, TS_ERR_SYSTEM, "cannot rename '%s' to '%s': %s", s->stage, s->target,
                                errno_text(errno, ebuf, sizeof ebuf));
    } else {
      (void)chmod(s->stage, s->mode);
      /* One step: the folder holds the old set or the new one, never a mix. */
      if (renameat2(AT_FDCWD, s->stage, AT_FDCWD, s->target, RENAME_EXCHANGE) != 0)
        st = move_in(s, diag); /* a file system without the exchange: file by file */
      /* the staging folder now holds the old set, or nothing */
    }
  }
  if (s->stage && !(commit && st == TS_OK && !s->inside && !s->exists)) remove_flat(s->stage);
  for (int k = 0; k < s->nnames; k++) ts_free(s->names[k]);
  ts_free(s->names);
  ts_free(s->dir);
  ts_free(s->target);
  ts_free(s->stage);
  memset(s, 0, sizeof *s);
  return st;
}
