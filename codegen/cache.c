/* The on-disk kernel cache: the object file of a compiled module, stored
 * under the SHA-256 of everything that made it (codegen.c's module_key), so
 * a later process loads the machine code instead of optimizing the IR again.
 * Entries are checked end to end (header, length, payload digest); anything
 * wrong is a miss and is rewritten. A store past TESSERA_CACHE_MAX_MB
 * deletes the least recently used entries. Never fatal: at most one warning. */
#include "codegen_internal.h"
#include "ts_env.h"

#include <openssl/evp.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* An entry: this header, then payload_bytes of object file. Native byte
 * order: the key names the target triple, so an entry never meets another
 * architecture. */
#define ENTRY_MAGIC "TSKCACHE"
typedef struct {
  char magic[8];
  uint32_t format;       /* CG_CACHE_FORMAT */
  uint32_t header_bytes; /* sizeof(entry_header_t) */
  unsigned char key[CG_KEY_LEN];
  uint64_t payload_bytes;
  unsigned char payload_sha256[CG_KEY_LEN];
} entry_header_t;
_Static_assert(sizeof(entry_header_t) == 88, "the entry header is laid out without padding");

bool cg_sha256(const void *p, size_t n, unsigned char out[CG_KEY_LEN]) {
  unsigned len = 0;
  return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == CG_KEY_LEN;
}

void cg_key_hex(const unsigned char key[CG_KEY_LEN], char hex[2 * CG_KEY_LEN + 1]) {
  for (int k = 0; k < CG_KEY_LEN; k++) snprintf(hex + 2 * k, 3, "%02x", key[k]);
}

/* One line per process: a cache that cannot work says so once, not per
 * entry or per device. */
static atomic_flag warned = ATOMIC_FLAG_INIT;

void cg_cache_warn(const char *fmt, ...) {
  if (atomic_flag_test_and_set(&warned)) return;
  ts_buf_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  ts_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  TS_LOG_WARN("kernel cache: %s", b.data ? b.data : fmt);
  ts_buf_free(&b);
}

static char *join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = ts_malloc(na + nb + 1);
  if (s) {
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
  }
  return s;
}

char *cg_cache_dir(void) {
  const char *d = ts_env_get(TS_ENV_CACHE_DIR);
  if (d) return *d && strcmp(d, "off") != 0 ? join(d, "/kernels") : NULL;
  const char *x = getenv("XDG_CACHE_HOME"); /* the XDG spec: a relative value is ignored */
  if (x && x[0] == '/') return join(x, "/tessera/kernels");
  const char *h = getenv("HOME");
  return h && *h ? join(h, "/.cache/tessera/kernels") : NULL;
}

char *cg_cache_path(const char *dir, const unsigned char key[CG_KEY_LEN]) {
  char name[2 * CG_KEY_LEN + 8];
  name[0] = '/';
  cg_key_hex(key, name + 1);
  strcat(name, ".o");
  return join(dir, name);
}

/* ---- reading ---------------------------------------------------------------- */

/* Why the entry at `path` (n bytes in `buf`) is not key's, or NULL when it
 * is; *payload then points at the object inside buf. */
static const char *bad_entry(const char *buf, size_t n, const unsigned char key[CG_KEY_LEN], const char **payload,
                             size_t *len) {
  entry_header_t h;
  if (n < sizeof h) return "shorter than its header";
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, ENTRY_MAGIC, sizeof h.magic) != 0) return "not a kernel cache entry";
  if (h.format != CG_CACHE_FORMAT || h.header_bytes != sizeof h) return "another format";
  if (memcmp(h.key, key, CG_KEY_LEN) != 0) return "another key";
  if (h.payload_bytes != n - sizeof h) return "its length does not match its header";
  unsigned char sum[CG_KEY_LEN];
  if (!cg_sha256(buf + sizeof h, n - sizeof h, sum)) return "SHA-256 failed";
  if (memcmp(sum, h.payload_sha256, CG_KEY_LEN) != 0) return "its payload does not match its digest";
  *payload = buf + sizeof h;
  *len = n - sizeof h;
  return NULL;
}

#define TOUCH_AFTER_SECONDS 60

char *cg_cache_load(const char *dir, const unsigned char key[CG_KEY_LEN], const char **obj, size_t *len) {
  char *path = cg_cache_path(dir, key);
  if (!path) return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno != ENOENT && errno != ENOTDIR) /* no entry, or no folder yet */
      cg_cache_warn("cannot read '%s': %s; compiling", path, strerror(errno));
    ts_free(path);
    return NULL;
  }
  char *buf = NULL;
  struct stat sb;
  const char *why = NULL;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    why = "not a regular file";
  } else if (!(buf = ts_malloc((size_t)sb.st_size + 1))) {
    why = "out of memory";
  } else {
    size_t got = fread(buf, 1, (size_t)sb.st_size, f);
    if (ferror(f)) why = strerror(errno);
    else if (got != (size_t)sb.st_size) why = "it changed while read";
    else why = bad_entry(buf, got, key, obj, len);
  }
  /* A hit is a use: eviction goes by mtime. Touched only once it is a
   * minute old (as relatime does atime), so the ranks of one job and a quick
   * rerun leave the entry as it was; a file this user may not touch (a cache
   * shared read-only) still serves, and only ages. */
  if (!why && time(NULL) - sb.st_mtime > TOUCH_AFTER_SECONDS) (void)futimens(fileno(f), NULL);
  fclose(f);
  if (why) {
    cg_cache_warn("'%s' is unusable (%s); recompiling it", path, why);
    ts_free(buf);
    buf = NULL;
  } else {
    TS_LOG_INFO("kernel cache: hit %s", path);
  }
  ts_free(path);
  return buf;
}

/* ---- writing ---------------------------------------------------------------- */

/* mkdir -p, the folders it makes private to the user (the cache holds code
 * this process will run). Returns 0 or an errno. */
static int make_dirs(const char *dir) {
  char *p = ts_strdup(dir);
  if (!p) return ENOMEM;
  int err = 0;
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s) continue;
    char c = *s;
    *s = 0;
    struct stat sb;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) err = errno;
    else if (stat(p, &sb) != 0) err = errno;
    else if (!S_ISDIR(sb.st_mode)) err = ENOTDIR;
    *s = c;
    if (err || !c) break;
  }
  ts_free(p);
  return err;
}

/* ts_atomic_file_*'s diagnostic as one clause: "PATH: error: X" -> "PATH: X". */
static void warn_diag(const ts_diag_t *d, ts_status_t st) {
  const char *t = d->text ? d->text : ts_status_string(st);
  const char *e = strstr(t, "error: ");
  int pre = e ? (int)(e - t) : 0;
  const char *rest = e ? e + 7 : t;
  cg_cache_warn("%.*s%.*s; the kernels are not cached", pre, t, (int)strcspn(rest, "\n"), rest);
}

void cg_cache_store(const char *dir, const unsigned char key[CG_KEY_LEN], const void *obj, size_t len) {
  int err = make_dirs(dir);
  if (err) {
    cg_cache_warn("cannot create '%s': %s; the kernels are not cached", dir, strerror(err));
    return;
  }
  char *path = cg_cache_path(dir, key);
  if (!path) return;
  entry_header_t h = {.format = CG_CACHE_FORMAT, .header_bytes = sizeof h, .payload_bytes = len};
  memcpy(h.magic, ENTRY_MAGIC, sizeof h.magic);
  memcpy(h.key, key, CG_KEY_LEN);
  ts_atomic_file_t af;
  ts_diag_t d = {0};
  ts_status_t st;
  if (!cg_sha256(obj, len, h.payload_sha256)) {
    cg_cache_warn("SHA-256 failed; the kernels are not cached");
  } else if ((st = ts_atomic_file_open(&af, path, &d)) != TS_OK) {
    warn_diag(&d, st);
  } else {
    /* a short write sets the stream's error flag, which the close reports */
    bool ok = fwrite(&h, sizeof h, 1, af.f) == 1 && fwrite(obj, 1, len, af.f) == len;
    /* fsync before the rename: a crash leaves the old entry or the whole new one */
    if (ok && (fflush(af.f) != 0 || fsync(fileno(af.f)) != 0)) {
      cg_cache_warn("cannot write '%s': %s; the kernels are not cached", path, strerror(errno));
      ts_atomic_file_close(&af, false, &d);
    } else if ((st = ts_atomic_file_close(&af, true, &d)) != TS_OK) {
      warn_diag(&d, st);
    } else {
      TS_LOG_INFO("kernel cache: stored %s", path);
      cg_cache_evict(dir, cg_cache_max_bytes(), key);
    }
  }
  ts_diag_free(&d);
  ts_free(path);
}

/* ---- eviction ----------------------------------------------------------------- */

uint64_t cg_cache_max_bytes(void) {
  const uint64_t dflt = (uint64_t)CG_CACHE_MAX_MB_DEFAULT << 20;
  const char *s = ts_env_get(TS_ENV_CACHE_MAX_MB);
  if (!s || !*s) return dflt;
  uint64_t mb = 0;
  for (const char *c = s; *c; c++) {
    if (*c < '0' || *c > '9' || mb > (UINT64_MAX >> 20) / 10) goto bad;
    mb = mb * 10 + (uint64_t)(*c - '0');
  }
  if (mb <= UINT64_MAX >> 20) return mb << 20;
bad:
  cg_cache_warn("TESSERA_CACHE_MAX_MB='%s' is not a whole number of MiB; using %d", s, CG_CACHE_MAX_MB_DEFAULT);
  return dflt;
}

/* Whether name is an entry's: 64 lowercase hex digits (cg_key_hex), ".o",
 * then exactly `rest` (a temporary's ".tmp." and anything after it when
 * rest is NULL). */
static bool entry_name(const char *name, const char *rest) {
  for (int k = 0; k < 2 * CG_KEY_LEN; k++)
    if (!((name[k] >= '0' && name[k] <= '9') || (name[k] >= 'a' && name[k] <= 'f'))) return false;
  const char *tail = name + 2 * CG_KEY_LEN;
  if (strncmp(tail, ".o", 2) != 0) return false;
  return rest ? strcmp(tail + 2, rest) == 0 : strncmp(tail + 2, ".tmp.", 5) == 0;
}

typedef struct {
  char *name;
  uint64_t bytes;
  struct timespec mtime;
} evictee_t;

static int older_first(const void *pa, const void *pb) {
  const evictee_t *a = pa, *b = pb;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name); /* a tie in one order for every process */
}

/* A writer holds its temporary for one object's write and fsync (seconds):
 * one this old was left by a process that died. */
#define STALE_TMP_SECONDS 3600

void cg_cache_evict(const char *dir, uint64_t max_bytes, const unsigned char keep[CG_KEY_LEN]) {
  char keep_name[2 * CG_KEY_LEN + 3] = "";
  if (keep) {
    cg_key_hex(keep, keep_name);
    strcat(keep_name, ".o");
  }
  DIR *d = opendir(dir);
  if (!d) {
    if (errno != ENOENT) cg_cache_warn("cannot list '%s' to evict old entries: %s", dir, strerror(errno));
    return;
  }
  evictee_t *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  const char *fail = NULL, *what = ""; /* what failed ("delete", what), with errno in err */
  int err = 0;
  errno = 0;
  for (struct dirent *e; (e = readdir(d)); errno = 0) {
    bool entry = entry_name(e->d_name, ""), tmp = !entry && entry_name(e->d_name, NULL);
    if (!entry && !tmp) continue; /* not the cache's: never counted, never touched */
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue; /* another process evicted it, or renamed its temporary */
      fail = "stat", what = e->d_name, err = errno;
      break;
    }
    if (!S_ISREG(sb.st_mode)) continue;
    if (tmp) {
      if (now - sb.st_mtime > STALE_TMP_SECONDS && unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
        fail = "delete", what = e->d_name, err = errno;
        break;
      }
      continue;
    }
    total += (uint64_t)sb.st_size;
    if (strcmp(e->d_name, keep_name) == 0) continue;
    if (n == cap) {
      evictee_t *g = ts_realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
      if (!g) {
        fail = "list", err = ENOMEM;
        break;
      }
      v = g;
    }
    if (!(v[n].name = ts_strdup(e->d_name))) {
      fail = "list", err = ENOMEM;
      break;
    }
    v[n].bytes = (uint64_t)sb.st_size;
    v[n++].mtime = sb.st_mtim;
  }
  if (!fail && errno) fail = "list", err = errno; /* readdir's own failure */
  if (!fail && total > max_bytes) {
    if (n) qsort(v, n, sizeof *v, older_first);
    for (size_t k = 0; k < n && total > max_bytes; k++) {
      if (unlinkat(dirfd(d), v[k].name, 0) != 0 && errno != ENOENT) { /* ENOENT: another process was first */
        fail = "delete", what = v[k].name, err = errno;
        break;
      }
      total -= v[k].bytes;
      TS_LOG_INFO("kernel cache: evicted %s/%s", dir, v[k].name);
    }
  }
  if (fail) cg_cache_warn("evicting old entries of '%s': cannot %s%s%s: %s", dir, fail, *what ? " " : " the folder",
                          what, strerror(err));
  for (size_t k = 0; k < n; k++) ts_free(v[k].name);
  ts_free(v);
  closedir(d);
}
