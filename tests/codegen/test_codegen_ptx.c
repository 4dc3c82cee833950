/* codegen/nvptx.c without a GPU: every fusion kind (tests/fusion/
 * fusion_cases.h) and, given as arguments, fused modules (the examples
 * after `tessera opt --stage=fused`) become PTX that ptxas assembles for
 * sm_90 (the H200). The GPU gets a kernel for exactly the fusions the CPU
 * codegen compiles, each an .entry of its name, and the PTX calls nothing
 * outside itself (no libdevice, no libm).
 *   test_codegen_ptx PTXAS [FUSED.hlo...]
 * PTXAS is ptxas's path, or a name not found (CMake's -NOTFOUND): skip, 77. */
#include "fusion_cases.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ptxas;

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* ptxas -arch=sm_90 on the text; its diagnostics go to stderr. */
static int assemble(const char *ptx, size_t len) {
  char src[] = "/tmp/ts_ptx_XXXXXX", bin[64];
  int fd = mkstemp(src);
  if (fd < 0) return -1;
  bool wrote = write(fd, ptx, len) == (ssize_t)len;
  close(fd);
  snprintf(bin, sizeof bin, "%s.cubin", src);
  int rc = -1;
  pid_t pid = wrote ? fork() : -1;
  if (pid == 0) {
    execl(ptxas, "ptxas", "-arch=sm_90", "-o", bin, src, (char *)NULL);
    _exit(127);
  }
  int ws;
  if (pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws)) rc = WEXITSTATUS(ws);
  unlink(src);
  unlink(bin);
  return rc;
}

/* m is fused already; want_compiled < 0: what the CPU codegen compiles. */
static void check_module(const char *name, ts_hlo_module_t *m, int want_compiled) {
  ts_diag_t d = {0};
  if (want_compiled < 0) {
    ts_codegen_t *cg = NULL;
    ts_codegen_stats_t cs = {0};
    EXPECT_EQ(ts_codegen_compile(m, NULL, &cg, &cs, &d), TS_OK);
    want_compiled = cs.compiled;
    ts_codegen_destroy(cg);
  }
  ts_codegen_ptx_t *p = NULL;
  ts_codegen_stats_t ps = {0};
  ts_status_t st = ts_codegen_ptx(m, &p, &ps, &d);
  if (st != TS_OK) fprintf(stderr, "%s: %s\n", name, d.text ? d.text : "?");
  EXPECT_EQ(st, TS_OK);
  ts_diag_free(&d);
  if (!p) return;
  EXPECT_EQ(p->n, want_compiled);
  EXPECT_EQ(ps.compiled, want_compiled);
  EXPECT_EQ(count(p->ptx, ".entry "), p->n);
  EXPECT(strstr(p->ptx, ".target " TS_CODEGEN_PTX_SM) != NULL);
  EXPECT(strstr(p->ptx, ".version 7.5") != NULL);
  EXPECT_EQ(count(p->ptx, ".extern"), 0); /* nothing to link: no libdevice, no libm */
  for (int k = 0; k < p->n; k++) {
    char entry[80];
    snprintf(entry, sizeof entry, ".entry %s(", p->k[k].name);
    EXPECT(strstr(p->ptx, entry) != NULL);
    EXPECT(ts_codegen_ptx_kernel(p, p->k[k].instr) == &p->k[k]);
    EXPECT_EQ(p->k[k].elements, ts_shape_elements(p->k[k].instr->shape));
  }
  int rc = p->n ? assemble(p->ptx, p->len) : 0;
  if (rc != 0) fprintf(stderr, "%s: ptxas -arch=sm_90 failed (%d)\n", name, rc);
  EXPECT_EQ(rc, 0);
  fprintf(stderr, "%s: %d of %d fusions as PTX (%zu bytes), ptxas sm_90 %s\n", name, p->n, ps.fusions, p->len,
          rc == 0 ? "ok" : "FAILED");
  ts_codegen_ptx_destroy(p);
}

static void fusion_kinds(void) {
  for (int c = 0; c < NFUSION_CASES; c++) {
    const fusion_case_t *fc = &fusion_cases[c];
    ts_source_t src = {"case.hlo", fc->text, strlen(fc->text)};
    ts_hlo_module_t *m = NULL;
    ts_diag_t d = {0};
    EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
    if (m) {
      EXPECT_EQ(ts_fusion_run(m, NULL, NULL, &d), TS_OK);
      check_module(fc->name, m, fc->compiled);
    }
    ts_diag_free(&d);
    ts_hlo_module_destroy(m);
  }
}

static void fused_file(const char *path) {
  char *text = NULL;
  size_t len = 0;
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  EXPECT_EQ(ts_read_file(path, &text, &len, &d), TS_OK);
  ts_source_t src = {path, text, len};
  if (text) EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
  if (d.text) fprintf(stderr, "%s", d.text);
  int fusions = 0;
  for (int c = 0; m && c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) fusions += m->comps[c]->instrs[k]->op == TS_OP_FUSION;
  EXPECT(fusions > 0); /* the input really is a fused module */
  if (m) check_module(path, m, -1);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&d);
}

int main(int argc, char **argv) {
  if (argc < 2 || access(argv[1], X_OK) != 0) {
    printf("SKIP: ptxas not found ('%s')\n", argc > 1 ? argv[1] : "");
    return 77;
  }
  ptxas = argv[1];
  if (argc == 2) fusion_kinds();
  for (int a = 2; a < argc; a++) fused_file(argv[a]);
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
