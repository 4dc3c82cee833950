/* tessera: which OpenBLAS kernels run. OpenBLAS reads OPENBLAS_CORETYPE
 * once, in its constructor, before main; so the core type cpuid calls for
 * takes effect by replacing this process image with the variable set
 * (execve of /proc/self/exe: same pid, so mpirun and srun see the same
 * rank). Then a small sgemm is checked against a loop; a wrong result from
 * a core type tessera forced re-executes with the next safer one
 * (kernels/ts_kernels_blas.h has the plan and why it ends). */
#include "ts_env.h"
#include "ts_kernels_blas.h"
#include "ts_launcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

/* The environment with `next`'s two variables in place of the current ones;
 * NULL on OOM. Built for execve, so that a failed exec leaves this image's
 * environment (and what it says about the running core type) as it was. */
static char **next_environ(const ts_kernels_blas_env_t *next, char *core_var, size_t core_cap, char *chosen_var,
                           size_t chosen_cap) {
  const char *chosen_name = ts_env_info(TS_ENV_BLAS_CORETYPE)->name;
  size_t n = 0, chosen_len = strlen(chosen_name);
  while (environ[n]) n++;
  char **envp = ts_calloc(n + 3, sizeof *envp);
  if (!envp) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *e = environ[i];
    if (strncmp(e, "OPENBLAS_CORETYPE=", 18) == 0) continue;
    if (strncmp(e, chosen_name, chosen_len) == 0 && e[chosen_len] == '=') continue;
    envp[k++] = environ[i];
  }
  if (next->coretype) {
    snprintf(core_var, core_cap, "OPENBLAS_CORETYPE=%s", next->coretype);
    envp[k++] = core_var;
  }
  snprintf(chosen_var, chosen_cap, "%s=%s", chosen_name, next->chosen);
  envp[k++] = chosen_var;
  envp[k] = NULL;
  return envp;
}

/* Returns only when the exec failed (no /proc, a seccomp filter): this image
 * keeps running with what OpenBLAS chose. */
static void reexec(char **argv, const ts_kernels_blas_env_t *next) {
  char core_var[96], chosen_var[96];
  char **envp = next_environ(next, core_var, sizeof core_var, chosen_var, sizeof chosen_var);
  if (!envp) return;
  fflush(NULL);
  execve("/proc/self/exe", argv, envp);
  TS_LOG_DEBUG("blas: cannot re-execute /proc/self/exe with OPENBLAS_CORETYPE=%s (%s)",
               next->coretype ? next->coretype : "(unset)", strerror(errno));
  ts_free(envp);
}

/* TESSERA_BLAS_CHECK_PERTURB's gemm (for the core types in its comma list): one element off, as a broken kernel's. */
static void perturbed_sgemm(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                            float beta, float *c, int ldc) {
  ts_kernels_blas_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  c[(m / 2) * ldc + n / 2] += 0.01f;
}

static const char *source_words(ts_kernels_blas_source_t s, const ts_kernels_blas_env_t *env) {
  switch (s) {
  case TS_BLAS_FROM_LIBRARY: return "OpenBLAS's own detection";
  case TS_BLAS_FROM_TESSERA:
    return env->coretype && *env->coretype ? "chosen by tessera" : "OpenBLAS's own detection, as TESSERA_BLAS_CORETYPE=none says";
  case TS_BLAS_FROM_USER: return "OPENBLAS_CORETYPE from the environment";
  }
  return "";
}

void ts_cli_blas_setup(char **argv) {
  ts_kernels_blas_env_t env = {getenv("OPENBLAS_CORETYPE"), ts_env_get(TS_ENV_BLAS_CORETYPE)}, next;
  ts_kernels_cpu_t cpu;
  ts_kernels_cpu_detect(&cpu);
  const char *detected = ts_kernels_blas_coretype_for(&cpu);
  const char *running = ts_kernels_blas_corename();
  if (ts_kernels_blas_plan_start(&env, detected, running, &next)) reexec(argv, &next);

  const char *perturb = ts_env_get(TS_ENV_BLAS_CHECK_PERTURB);
  bool wrong = false;
  for (const char *p = perturb; p && *p && !wrong; p += strcspn(p, ","), p += *p == ',') {
    size_t len = strcspn(p, ",");
    wrong = len == strlen(running) && strncasecmp(p, running, len) == 0;
  }
  bool ok = true;
  double worst = 0;
  if (ts_kernels_blas_check(wrong ? perturbed_sgemm : ts_kernels_blas_sgemm, &ok, &worst) != TS_OK) {
    TS_LOG_DEBUG("blas: no memory for the start-up check of sgemm");
    ok = true; /* nothing known against the kernels */
  }
  ts_kernels_blas_source_t source = ts_kernels_blas_source(&env);
  if (!ok) {
    bool safer = ts_kernels_blas_plan_fallback(&env, running, &next);
    TS_LOG_WARN("blas: OpenBLAS's %s kernels (%s) compute sgemm wrong at start-up (error %.3g times the f32 "
                "bound); %s",
                running, source_words(source, &env), worst,
                safer ? "falling back to a safer core type"
                      : source == TS_BLAS_FROM_USER ? "keeping them as OPENBLAS_CORETYPE asks"
                                                    : "no safer core type is left; results may be off");
    if (safer) reexec(argv, &next);
  }
  TS_LOG_INFO("blas: OpenBLAS runs its %s kernels (%s; cpuid calls for %s)", running, source_words(source, &env),
              detected ? detected : "none");
}
