/* The kernel cache through the codegen API (codegen/cache.c): the same
 * module twice in one process shares its code; a module compiled by another
 * process (this program run again as a child) comes from the cache, with
 * fusion kernels or only the entry's loop; an entry whose digest is right
 * but whose object is not the module's is recompiled; no_cache, and a module
 * with nothing to compile, read and write nothing. Each case compiles its own
 * module (a different constant: a different key) into its own cache folder
 * under TMPDIR. Each kernel is called: out[i] = in[i] * K. Then eviction
 * (cg_cache_evict) on hand-made entries: least recently used first, a hit
 * counting as a use, foreign files untouched, a store over the limit, and
 * TESSERA_CACHE_MAX_MB's parsing. */
#include "codegen_internal.h"
#include "ts_codegen.h"
#include "ts_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 64

static const char *self; /* argv[0], run again for "another process" */

static ts_hlo_module_t *module(int k, const char *fname) {
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule m\n%s {\n  p = f32[%d] parameter(0)\n  c = f32[] constant(%d)\n"
           "  b = f32[%d] broadcast(c), dimensions={}\n  ROOT y = f32[%d] multiply(p, b)\n}\n"
           "ENTRY e {\n  a = f32[%d] parameter(0)\n  ROOT z = f32[%d] fusion(a), kind=kLoop, calls=%s\n}\n",
           fname, N, k, N, N, N, N, fname);
  ts_source_t src = {"cache.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
  ts_diag_free(&d);
  return m;
}

/* The same arithmetic as the entry itself (no fusion): opts.entry compiles it. */
static ts_hlo_module_t *entry_module(int k) {
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m\nENTRY e {\n  p = f32[%d] parameter(0)\n  c = f32[] constant(%d)\n"
           "  b = f32[%d] broadcast(c), dimensions={}\n  ROOT y = f32[%d] multiply(p, b)\n}\n",
           N, k, N, N);
  ts_source_t src = {"entry.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
  ts_diag_free(&d);
  return m;
}

/* Whether the entry loop computes in * k. */
static bool entry_computes(ts_codegen_loop_fn fn, int k) {
  if (!fn) return false;
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.25f - 3.0f;
  void *in[1] = {x};
  fn(in, y, N);
  for (int i = 0; i < N; i++)
    if (y[i] != x[i] * (float)k) return false;
  return true;
}

/* Compiles m (with opts.entry: its entry too); the kernel of its fusion
 * (NULL on failure or without one) and the stats. */
static ts_kernel_fn compile_opts(ts_hlo_module_t *m, bool no_cache, bool entry, ts_codegen_t **cg,
                                 ts_codegen_stats_t *cs) {
  ts_codegen_opts_t o = {.no_cache = no_cache, .entry = entry};
  ts_diag_t d = {0};
  ts_status_t st = ts_codegen_compile(m, &o, cg, cs, &d);
  if (st != TS_OK) fprintf(stderr, "compile: %s\n", d.text ? d.text : ts_status_string(st));
  EXPECT_EQ(st, TS_OK);
  ts_diag_free(&d);
  return st == TS_OK ? ts_codegen_kernel(*cg, m->entry->root) : NULL;
}

static ts_kernel_fn compile(ts_hlo_module_t *m, bool no_cache, ts_codegen_t **cg, ts_codegen_stats_t *cs) {
  return compile_opts(m, no_cache, false, cg, cs);
}

/* Whether fn computes in * k. */
static bool computes(ts_kernel_fn fn, const ts_hlo_module_t *m, int k) {
  if (!fn) return false;
  static const int64_t dims[1] = {N};
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i - 20.5f;
  ts_array_t in = {TS_F32, 1, dims, x}, out = {TS_F32, 1, dims, y};
  if (fn(NULL, m->entry->root, &in, 1, &out, 1) != TS_OK) return false;
  for (int i = 0; i < N; i++)
    if (y[i] != x[i] * (float)k) return false;
  return true;
}

/* A fresh cache folder as TESSERA_CACHE_DIR; the caller frees it. */
static char *fresh_dir(void) {
  const char *t = getenv("TMPDIR");
  char *dir = ts_malloc(strlen(t && *t ? t : "/tmp") + 32);
  sprintf(dir, "%s/tessera-cache-XXXXXX", t && *t ? t : "/tmp");
  EXPECT(mkdtemp(dir) != NULL);
  setenv("TESSERA_CACHE_DIR", dir, 1);
  return dir;
}

/* The entries in dir/kernels: their count, the first one's path in `path`. */
static int entries(const char *dir, char *path, size_t cap) {
  char kd[512];
  snprintf(kd, sizeof kd, "%s/kernels", dir);
  DIR *d = opendir(kd);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".o") && !strstr(e->d_name, ".tmp")) {
      if (!n++ && path) snprintf(path, cap, "%s/%s", kd, e->d_name);
    }
  if (d) closedir(d);
  return n;
}

static void rm_dir(char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  EXPECT_EQ(system(cmd), 0);
  ts_free(dir);
}

/* Compiles module(k) (entry_module(k) with `entry`) in a child process
 * (this program, case "child"): its entry lands in the cache. */
static void compile_elsewhere(int k, bool entry) {
  char ks[16];
  snprintf(ks, sizeof ks, "%d", k);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", self, "child", ks, entry ? "entry" : "fusion", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid); /* the child has the test's timeout */
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Module k compiled by another process into dir's cache, then compiled
 * here as m: one entry, a hit, nothing optimized. */
static ts_kernel_fn hit_from_elsewhere(const char *dir, int k, bool entry, ts_hlo_module_t *m, ts_codegen_t **cg,
                                       ts_codegen_stats_t *cs) {
  compile_elsewhere(k, entry);
  EXPECT_EQ(entries(dir, NULL, 0), 1);
  ts_kernel_fn fn = compile_opts(m, false, entry, cg, cs);
  EXPECT(cs->cache_on && cs->cache_hit);
  EXPECT(cs->opt_ms == 0);
  return fn;
}

static int child(int k, bool entry) {
  ts_hlo_module_t *m = entry ? entry_module(k) : module(k, "f");
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  ts_kernel_fn fn = m ? compile_opts(m, false, entry, &cg, &cs) : NULL;
  EXPECT(entry ? entry_computes(ts_codegen_entry(cg), k) : computes(fn, m, k));
  EXPECT(cs.cache_on && !cs.cache_hit); /* a cold cache */
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  return failures ? 1 : 0;
}

/* The same module again, and one different only in names, reuse the code
 * the first compile put in this process's JIT (adding it twice would be an
 * error: duplicate definitions). */
static void reuse(void) {
  char *dir = fresh_dir();
  ts_hlo_module_t *a = module(3, "f"), *b = module(3, "other_name");
  ts_codegen_t *ca = NULL, *cb = NULL, *cc = NULL;
  ts_codegen_stats_t sa, sb, sc;
  ts_kernel_fn fa = compile(a, false, &ca, &sa);
  ts_codegen_destroy(ca); /* the code stays */
  ts_kernel_fn fb = compile(a, false, &cb, &sb), fc = compile(b, false, &cc, &sc);
  EXPECT(computes(fa, a, 3) && computes(fb, a, 3) && computes(fc, b, 3));
  EXPECT(fa == fb && fb == fc);
  EXPECT(sa.cache_on && !sa.cache_hit && sa.opt_ms > 0);
  EXPECT(!sb.cache_hit && sb.opt_ms == 0 && sb.ir_ms >= 0);
  EXPECT_EQ(entries(dir, NULL, 0), 1);
  ts_codegen_destroy(cb);
  ts_codegen_destroy(cc);
  ts_hlo_module_destroy(a);
  ts_hlo_module_destroy(b);
  rm_dir(dir);
}

/* Another process's entry is loaded: a hit, no optimization, right values. */
static void disk(void) {
  char *dir = fresh_dir();
  ts_hlo_module_t *m = module(5, "f");
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  ts_kernel_fn fn = hit_from_elsewhere(dir, 5, false, m, &cg, &cs);
  EXPECT(computes(fn, m, 5));
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  rm_dir(dir);
}

/* An entry with a good header and digest around bytes that are no object of
 * the module (as a bug or a hand-made file could leave): not loaded, the
 * module compiled and the entry rewritten. */
static void bad_object(void) {
  char *dir = fresh_dir(), path[1024];
  compile_elsewhere(7, false);
  EXPECT_EQ(entries(dir, path, sizeof path), 1);
  const char *hex = strrchr(path, '/') + 1;
  unsigned char key[CG_KEY_LEN];
  for (int i = 0; i < CG_KEY_LEN; i++) {
    unsigned v = 0;
    EXPECT(sscanf(hex + 2 * i, "%2x", &v) == 1);
    key[i] = (unsigned char)v;
  }
  char kd[560];
  snprintf(kd, sizeof kd, "%s/kernels", dir);
  static const char junk[] = "\177ELF but not the kernels of this module";
  cg_cache_store(kd, key, junk, sizeof junk);
  struct stat sb;
  EXPECT(stat(path, &sb) == 0 && sb.st_size == 88 + (off_t)sizeof junk);
  ts_hlo_module_t *m = module(7, "f");
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  ts_kernel_fn fn = compile(m, false, &cg, &cs);
  EXPECT(cs.cache_on && !cs.cache_hit);
  EXPECT(computes(fn, m, 7));
  EXPECT(stat(path, &sb) == 0 && sb.st_size > 88 + (off_t)sizeof junk); /* rewritten with the real object */
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  rm_dir(dir);
}

/* A module with no fusion kernels, only the entry's loop (opts.entry, as
 * test_codegen_math compiles): another process's entry is loaded. */
static void entry_only(void) {
  char *dir = fresh_dir();
  ts_hlo_module_t *m = entry_module(11);
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  hit_from_elsewhere(dir, 11, true, m, &cg, &cs);
  EXPECT_EQ(cs.kernels, 0);
  EXPECT(entry_computes(ts_codegen_entry(cg), 11));
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  rm_dir(dir);
}

/* Nothing to compile (no fusion, no entry asked for): no JIT work, no entry. */
static void nothing(void) {
  char *dir = fresh_dir();
  ts_hlo_module_t *m = entry_module(13);
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  EXPECT(compile(m, false, &cg, &cs) == NULL);
  EXPECT(cg != NULL && !cs.cache_on && cs.kernels == 0 && ts_codegen_entry(cg) == NULL);
  struct stat sb;
  char kd[560];
  snprintf(kd, sizeof kd, "%s/kernels", dir);
  EXPECT(stat(kd, &sb) != 0);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  rm_dir(dir);
}

/* no_cache: nothing read, nothing written, the kernel still right. */
static void no_cache(void) {
  char *dir = fresh_dir();
  ts_hlo_module_t *m = module(9, "f");
  ts_codegen_t *cg = NULL;
  ts_codegen_stats_t cs;
  ts_kernel_fn fn = compile(m, true, &cg, &cs);
  EXPECT(!cs.cache_on && !cs.cache_hit);
  EXPECT(computes(fn, m, 9));
  struct stat sb;
  char kd[560];
  snprintf(kd, sizeof kd, "%s/kernels", dir);
  EXPECT(stat(kd, &sb) != 0); /* not even the folder */
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
  rm_dir(dir);
}

/* ---- eviction ------------------------------------------------------------------ */

#define PAYLOAD 1000
#define ENTRY_BYTES (88 + PAYLOAD) /* the header and the payload */

/* A fresh cache folder's kernels/ (made), in kd; the caller rm_dir()s the
 * returned folder. */
static char *fresh_kernels(char *kd, size_t cap) {
  char *dir = fresh_dir();
  snprintf(kd, cap, "%s/kernels", dir);
  EXPECT(mkdir(kd, 0700) == 0);
  return dir;
}

/* Hand-made entry k of case `tag` in kd, its mtime `age` seconds ago; its
 * key in key, its path in path. */
static void fake_entry(const char *kd, int tag, int k, int age, unsigned char key[CG_KEY_LEN], char *path,
                       size_t cap) {
  memset(key, 0xab, CG_KEY_LEN); /* hex with letters: foreign() uppercases them */
  key[0] = (unsigned char)tag;
  key[1] = (unsigned char)k;
  static char payload[PAYLOAD];
  memset(payload, 'a' + k, sizeof payload);
  cg_cache_store(kd, key, payload, sizeof payload);
  char *p = cg_cache_path(kd, key);
  snprintf(path, cap, "%s", p);
  ts_free(p);
  struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
  EXPECT(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* Five entries, oldest first: a limit of three entries' bytes deletes the
 * two oldest; a limit of none keeps only `keep`, here not the newest. */
static void evict_lru(void) {
  char kd[560], path[5][1024];
  unsigned char key[5][CG_KEY_LEN];
  char *dir = fresh_kernels(kd, sizeof kd);
  for (int k = 0; k < 5; k++) fake_entry(kd, 1, k, 500 - 100 * k, key[k], path[k], sizeof path[k]);
  cg_cache_evict(kd, 3 * ENTRY_BYTES, key[4]);
  for (int k = 0; k < 5; k++) EXPECT_EQ(exists(path[k]), k >= 2);
  cg_cache_evict(kd, 3 * ENTRY_BYTES, key[4]); /* at the limit: nothing more goes */
  for (int k = 2; k < 5; k++) EXPECT(exists(path[k]));
  cg_cache_evict(kd, 0, key[2]);
  for (int k = 0; k < 5; k++) EXPECT_EQ(exists(path[k]), k == 2);
  rm_dir(dir);
}

/* A is older than B, then loaded: the hit makes it the newer, so room for
 * one besides the kept C evicts B. A hit on an entry under a minute old
 * leaves its mtime alone (no metadata write per rank of a job). */
static void hit_refreshes(void) {
  char kd[560], pa[1024], pb[1024], pc[1024];
  unsigned char ka[CG_KEY_LEN], kb[CG_KEY_LEN], kc[CG_KEY_LEN];
  char *dir = fresh_kernels(kd, sizeof kd);
  fake_entry(kd, 2, 0, 300, ka, pa, sizeof pa);
  fake_entry(kd, 2, 1, 200, kb, pb, sizeof pb);
  fake_entry(kd, 2, 2, 0, kc, pc, sizeof pc);
  const char *obj = NULL;
  size_t len = 0;
  char *buf = cg_cache_load(kd, ka, &obj, &len);
  EXPECT(buf != NULL && len == PAYLOAD);
  ts_free(buf);
  struct stat sb;
  EXPECT(stat(pa, &sb) == 0 && sb.st_mtime >= time(NULL) - 60);
  struct timespec young[2] = {{time(NULL) - 10, 0}, {time(NULL) - 10, 0}};
  EXPECT(utimensat(AT_FDCWD, pc, young, 0) == 0);
  EXPECT((buf = cg_cache_load(kd, kc, &obj, &len)) != NULL);
  ts_free(buf);
  EXPECT(stat(pc, &sb) == 0 && sb.st_mtime == young[1].tv_sec);
  cg_cache_evict(kd, 2 * ENTRY_BYTES, kc);
  EXPECT(exists(pa));
  EXPECT(!exists(pb));
  EXPECT(exists(pc));
  rm_dir(dir);
}

/* Files that are not entries are neither counted nor deleted (a big foreign
 * file leaves a lone entry under the limit), even with a limit of 0: other
 * names, an uppercase key, a folder and a link named like an entry, a young
 * temporary; only a temporary over an hour old goes. */
static void foreign(void) {
  char kd[560], pe[1024], path[8][1200];
  unsigned char key[CG_KEY_LEN];
  char *dir = fresh_kernels(kd, sizeof kd);
  fake_entry(kd, 3, 0, 100, key, pe, sizeof pe);
  const char *hex = strrchr(pe, '/') + 1; /* <64 hex>.o */
  char upper[80];
  for (int i = 0; i < 64; i++) upper[i] = hex[i] >= 'a' ? (char)(hex[i] - 'a' + 'A') : hex[i];
  strcpy(upper + 64, ".o");
  snprintf(path[0], sizeof path[0], "%s/notes.txt", kd);
  snprintf(path[1], sizeof path[1], "%s/%s", kd, upper);
  snprintf(path[2], sizeof path[2], "%s/%.64s.o.bak", kd, hex);
  snprintf(path[3], sizeof path[3], "%s/%.63s0.o", kd, hex); /* a folder */
  snprintf(path[4], sizeof path[4], "%s/%.63s1.o", kd, hex); /* a link to notes.txt */
  snprintf(path[5], sizeof path[5], "%s/%s.tmp.young1", kd, hex);
  snprintf(path[6], sizeof path[6], "%s/%s.tmp.stale1", kd, hex);
  snprintf(path[7], sizeof path[7], "%s/x%s", kd, hex);
  for (int i = 0; i < 8; i++) {
    if (i == 3) {
      EXPECT(mkdir(path[i], 0700) == 0);
    } else if (i == 4) {
      EXPECT(symlink(path[0], path[i]) == 0);
    } else {
      FILE *f = fopen(path[i], "wb");
      EXPECT(f != NULL);
      static char big[10 * ENTRY_BYTES];
      if (f) EXPECT(fwrite(big, 1, i == 0 ? sizeof big : 100, f) == (i == 0 ? sizeof big : 100));
      if (f) fclose(f);
    }
  }
  struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  EXPECT(utimensat(AT_FDCWD, path[6], old, 0) == 0);
  cg_cache_evict(kd, ENTRY_BYTES, NULL);
  EXPECT(exists(pe)); /* the foreign bytes do not count */
  cg_cache_evict(kd, 0, NULL);
  EXPECT(!exists(pe));
  for (int i = 0; i < 8; i++) {
    if (exists(path[i]) != (i != 6)) fprintf(stderr, "wrong: %s\n", path[i]);
    EXPECT_EQ(exists(path[i]), i != 6);
  }
  rm_dir(dir);
}

/* cg_cache_store evicts on its own: with TESSERA_CACHE_MAX_MB=0 a store
 * leaves only itself; with the default, everything stays. */
static void store_evicts(void) {
  char kd[560], p0[1024], p1[1024], p2[1024];
  unsigned char k0[CG_KEY_LEN], k1[CG_KEY_LEN], k2[CG_KEY_LEN];
  char *dir = fresh_kernels(kd, sizeof kd);
  unsetenv("TESSERA_CACHE_MAX_MB");
  fake_entry(kd, 4, 0, 0, k0, p0, sizeof p0);
  fake_entry(kd, 4, 1, 0, k1, p1, sizeof p1);
  EXPECT(exists(p0) && exists(p1));
  setenv("TESSERA_CACHE_MAX_MB", "0", 1);
  fake_entry(kd, 4, 2, 0, k2, p2, sizeof p2);
  unsetenv("TESSERA_CACHE_MAX_MB");
  EXPECT(!exists(p0));
  EXPECT(!exists(p1));
  EXPECT(exists(p2));
  rm_dir(dir);
}

/* cg_cache_max_bytes() in a child process (cache warnings are once per
 * process) with TESSERA_CACHE_MAX_MB=value (NULL: unset): its result, and
 * how many warnings naming the variable and the value it printed. */
static unsigned long long max_bytes_elsewhere(const char *value, int *warnings) {
  char *dir = fresh_dir(), out[600], err[600];
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  if (value) setenv("TESSERA_CACHE_MAX_MB", value, 1);
  else unsetenv("TESSERA_CACHE_MAX_MB");
  setenv("TESSERA_LOG", "warning", 1);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr)) _exit(126);
    execl("/proc/self/exe", self, "maxbytes", (char *)NULL);
    _exit(127);
  }
  unsetenv("TESSERA_CACHE_MAX_MB");
  int status = 0;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  unsigned long long got = 0;
  FILE *f = fopen(out, "r");
  EXPECT(f && fscanf(f, "%llu", &got) == 1);
  if (f) fclose(f);
  char want[200], line[600];
  snprintf(want, sizeof want, "TESSERA_CACHE_MAX_MB='%s'", value ? value : "");
  *warnings = 0;
  f = fopen(err, "r");
  while (f && fgets(line, sizeof line, f)) {
    fprintf(stderr, "  [child] %s", line);
    if (strstr(line, "warning: kernel cache") && strstr(line, want)) ++*warnings;
  }
  if (f) fclose(f);
  rm_dir(dir);
  return got;
}

static void bad_limit(void) {
  const unsigned long long dflt = 256ull << 20;
  static const char *bad[] = {"12abc", "-1", "+5", " 7", "1.5", "64M", "99999999999999999999", "17592186044416"};
  int w = -1;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    EXPECT_EQ(max_bytes_elsewhere(bad[i], &w), dflt);
    EXPECT_EQ(w, 1);
  }
  EXPECT_EQ(max_bytes_elsewhere(NULL, &w), dflt);
  EXPECT_EQ(w, 0);
  EXPECT_EQ(max_bytes_elsewhere("", &w), dflt);
  EXPECT_EQ(w, 0);
  EXPECT_EQ(max_bytes_elsewhere("0", &w), 0);
  EXPECT_EQ(w, 0);
  EXPECT_EQ(max_bytes_elsewhere("3", &w), 3ull << 20);
  EXPECT_EQ(w, 0);
  EXPECT_EQ(max_bytes_elsewhere("17592186044415", &w), 17592186044415ull << 20); /* the largest that fits */
  EXPECT_EQ(w, 0);
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc == 4 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]), strcmp(argv[3], "entry") == 0);
  if (argc == 2 && strcmp(argv[1], "maxbytes") == 0) /* for max_bytes_elsewhere */
    return printf("%llu\n", (unsigned long long)cg_cache_max_bytes()) < 0;
  static const ts_test_case_t cases[] = {{"reuse", reuse},
                                         {"disk", disk},
                                         {"bad_object", bad_object},
                                         {"entry_only", entry_only},
                                         {"nothing", nothing},
                                         {"no_cache", no_cache},
                                         {"evict_lru", evict_lru},
                                         {"hit_refreshes", hit_refreshes},
                                         {"foreign", foreign},
                                         {"store_evicts", store_evicts},
                                         {"bad_limit", bad_limit}};
  return ts_test_cases("test_codegen_cache", argc, argv, cases, (int)(sizeof cases / sizeof *cases));
}
