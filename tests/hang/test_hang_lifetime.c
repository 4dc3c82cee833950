/* The coordinator's lifetime and name: started by a process that dies
 * before any worker connects, it leaves at once (not after the 300 s
 * connect timeout, holding stderr, with a false "never connected" digest),
 * and ps/pgrep show it as tessera-hang-coordinator. The latency is printed,
 * bounded loosely. Runs itself as the coordinator (argv[1]
 * "hang-coordinator"), as `tessera` does. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hang_internal.h"
#include "hang_test.h"
#include "ts_test.h"

static bool gone(pid_t pid) {
  char path[64], buf[256] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return true;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')');
  return p && (p[2] == 'Z' || p[2] == 'X');
}

static void read_proc(pid_t pid, const char *what, char *buf, size_t n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t got = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[got] = 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "hang-coordinator") == 0) return ts_hang_coordinator_main(argc - 1, argv + 1);
  int pfd[2];
  EXPECT(pipe(pfd) == 0);
  pid_t launcher = fork();
  if (launcher == 0) {
    /* The job: starts the coordinator for 2 workers, then dies before
     * either connects (tessera run killed during startup). */
    ts_hang_coord_opts_t o = quiet_coord_opts(2, "s", 5);
    char addr[128];
    pid_t pid = -1;
    ts_diag_t diag = {0};
    if (ts_hang_coordinator_spawn(&o, NULL, addr, sizeof addr, &pid, &diag) != TS_OK) _exit(1);
    if (write(pfd[1], &pid, sizeof pid) != (ssize_t)sizeof pid) _exit(1);
    char comm[64], cmdline[256];
    read_proc(pid, "comm", comm, sizeof comm);
    read_proc(pid, "cmdline", cmdline, sizeof cmdline);
    printf("coordinator pid %d comm '%.*s' argv[0] '%s'\n", (int)pid, (int)strcspn(comm, "\n"), comm, cmdline);
    bool named = strncmp(comm, "tessera-hang-co", 15) == 0 && strcmp(cmdline, "tessera-hang-coordinator") == 0;
    fflush(stdout);
    _exit(named ? 0 : 3);
  }
  close(pfd[1]);
  pid_t coord = -1;
  EXPECT(read(pfd[0], &coord, sizeof coord) == (ssize_t)sizeof coord && coord > 0);
  int status = 0;
  waitpid(launcher, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* 3: not visible by name */
  double t0 = ts_hang_mono();
  while (coord > 0 && !gone(coord) && ts_hang_mono() - t0 < 20) usleep(20 * 1000);
  double dt = ts_hang_mono() - t0;
  printf("the coordinator left %.2f s after its job died\n", dt);
  EXPECT(coord > 0 && gone(coord));
  if (coord > 0 && !gone(coord)) kill(coord, SIGKILL);
  return failures ? 1 : 0;
}
