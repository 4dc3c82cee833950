/* The kernel cache through the codegen API (codegen/cache.c): the same
 * module twice in one process shares its code; a module compiled by another
 * process (this program run again as a child) comes from the cache, with
 * fusion kernels or only the entry's loop; an entry whose digest is right
 * but whose object is not the module's is recompiled; no_cache, and a module
 * with nothing to compile, read and write nothing. Each case compiles its own
 * module (a different constant: a different key) into its own cache folder
 * under TMPDIR. Each kernel is called: out[i] = in[i] * K. */
#include "codegen_internal.h"
#include "ts_codegen.h"
#include "ts_test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

int main(int argc, char **argv) {
  self = argv[0];
  if (argc == 4 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]), strcmp(argv[3], "entry") == 0);
  static const ts_test_case_t cases[] = {{"reuse", reuse},           {"disk", disk},       {"bad_object", bad_object},
                                         {"entry_only", entry_only}, {"nothing", nothing}, {"no_cache", no_cache}};
  return ts_test_cases("test_codegen_cache", argc, argv, cases, 6);
}
