/* Starting the coordinator from the launcher: posix_spawn of our own
 * executable as `hang-coordinator` in a new session (so that neither
 * mpirun's signals to rank 0's process group nor rank 0's death take it
 * down), with the secret in its environment rather than on its command
 * line, and the bound address read back from its stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hang_internal.h"

extern char **environ;

/* environ with TESSERA_HANG_SECRET=secret replacing any existing entry. */
static char **env_with_secret(const char *secret, char **owned) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = ts_calloc(n + 2, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TESSERA_HANG_SECRET=", 20)) env[k++] = environ[i];
  size_t len = strlen(secret) + 21;
  *owned = ts_malloc(len);
  if (!*owned) {
    ts_free(env);
    return NULL;
  }
  snprintf(*owned, len, "TESSERA_HANG_SECRET=%s", secret);
  env[k++] = *owned;
  env[k] = NULL;
  return env;
}

ts_status_t ts_hang_coordinator_spawn(const ts_hang_coord_opts_t *o, const char *exe, char *addr, size_t addr_len,
                                      pid_t *pid, ts_diag_t *diag) {
  *pid = -1;
  if (!o || o->world < 1 || !o->secret || !*o->secret || addr_len == 0) {
    ts_diag_plain(diag, "hang detector: cannot start the coordinator without a world size and a secret");
    return TS_ERR_INVALID_ARGUMENT;
  }
  char world[16], timeout[32], gather[32], connect[32], parent[16], launcher[16], pgid[16];
  snprintf(parent, sizeof parent, "%d", o->parent_pid > 0 ? o->parent_pid : (int)getpid());
  snprintf(launcher, sizeof launcher, "%d", o->launcher_pid > 0 ? o->launcher_pid : (int)getppid());
  snprintf(pgid, sizeof pgid, "%d", o->launch_pgid > 0 ? o->launch_pgid : (int)getpgrp());
  snprintf(world, sizeof world, "%d", o->world);
  snprintf(timeout, sizeof timeout, "%g", o->hang_timeout_s > 0 ? o->hang_timeout_s : 60.0);
  snprintf(gather, sizeof gather, "%g", o->gather_timeout_s > 0 ? o->gather_timeout_s : 2.0);
  snprintf(connect, sizeof connect, "%g", o->connect_timeout_s > 0 ? o->connect_timeout_s : 300.0);
  const char *self = exe ? exe : "/proc/self/exe";
  char *argv[28];
  int a = 0;
  argv[a++] = "tessera-hang-coordinator"; /* what ps and pgrep -f show */
  argv[a++] = "hang-coordinator";
  argv[a++] = "--listen";
  argv[a++] = (char *)(o->listen ? o->listen : "127.0.0.1:0");
  argv[a++] = "--world";
  argv[a++] = world;
  argv[a++] = "--hang-timeout";
  argv[a++] = timeout;
  argv[a++] = "--gather-timeout";
  argv[a++] = gather;
  argv[a++] = "--connect-timeout";
  argv[a++] = connect;
  argv[a++] = o->abort_on_hang ? "--abort-on-hang=true" : "--abort-on-hang=false";
  if (o->digest_path) {
    argv[a++] = "--hang-digest";
    argv[a++] = (char *)o->digest_path;
  }
  if (o->quiet) argv[a++] = "--quiet";
  if (o->checkpoint_dir) {
    argv[a++] = "--checkpoint-dir";
    argv[a++] = (char *)o->checkpoint_dir;
  }
  argv[a++] = "--parent-pid";
  argv[a++] = parent;
  argv[a++] = "--launcher-pid";
  argv[a++] = launcher;
  argv[a++] = "--launch-pgid";
  argv[a++] = pgid;
  argv[a] = NULL;

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    ts_diag_plain(diag, "hang detector: pipe: %s", strerror(errno));
    return TS_ERR_SYSTEM;
  }
  char *secret_entry = NULL;
  char **env = env_with_secret(o->secret, &secret_entry);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  /* Nothing of rank 0's (MPI sockets, shared-memory fds) leaks into it. */
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_init(&at);
  /* Its own session: mpirun's signals to rank 0's group do not reach it.
   * Default signal dispositions and an empty mask, whatever rank 0 set. */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = env ? posix_spawn(pid, self, &fa, &at, argv, env) : ENOMEM;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  ts_free(env);
  ts_free(secret_entry);
  close(pfd[1]);
  if (rc != 0) {
    close(pfd[0]);
    *pid = -1;
    ts_diag_plain(diag, "hang detector: cannot start the coordinator (%s hang-coordinator): %s", self, strerror(rc));
    return TS_ERR_SYSTEM;
  }
  /* The first line on its stdout is the bound address. */
  char line[256];
  size_t len = 0;
  double deadline = ts_hang_mono() + 10;
  ts_status_t st = TS_ERR_TIMEOUT;
  while (len < sizeof line - 1) {
    double left = deadline - ts_hang_mono();
    if (left <= 0) break;
    struct pollfd pf = {pfd[0], POLLIN, 0};
    if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0) continue;
    ssize_t n = read(pfd[0], line + len, sizeof line - 1 - len);
    if (n <= 0) {
      st = TS_ERR_SYSTEM;
      break;
    }
    len += (size_t)n;
    line[len] = '\0';
    char *nl = strchr(line, '\n');
    if (nl) {
      *nl = '\0';
      st = TS_OK;
      break;
    }
  }
  close(pfd[0]);
  if (st != TS_OK || len == 0) {
    int code = 0;
    ts_hang_coordinator_wait(*pid, 0.5, &code);
    *pid = -1;
    ts_diag_plain(diag, "hang detector: the coordinator did not report its address (%s; exit code %d)",
                  st == TS_ERR_TIMEOUT ? "timed out after 10 s" : "it exited", code);
    return st == TS_OK ? TS_ERR_SYSTEM : st;
  }
  ts_hang_strlcpy(addr, line, addr_len);
  return TS_OK;
}

ts_status_t ts_hang_coordinator_wait(pid_t pid, double timeout_s, int *exit_code) {
  if (exit_code) *exit_code = -1;
  if (pid <= 0) return TS_ERR_INVALID_ARGUMENT;
  double deadline = ts_hang_mono() + (timeout_s > 0 ? timeout_s : 0);
  int status;
  bool killed = false;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return errno == ECHILD ? TS_ERR_INVALID_ARGUMENT : TS_ERR_SYSTEM;
    if (!killed && ts_hang_mono() >= deadline) {
      kill(pid, SIGKILL);
      killed = true;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return killed ? TS_ERR_TIMEOUT : TS_OK;
}
