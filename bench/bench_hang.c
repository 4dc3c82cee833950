/* The hang detector's overhead: (1) the progress record stores the runtime
 * makes around every instruction (activity, instr, progress, timestamp),
 * against a loop of small kernels without them; (2) the heartbeat thread's
 * CPU time against a real coordinator process; (3) the cost of one state
 * snapshot. Prints a table; never a timed assertion.
 *   bench_hang [--instrs N] [--elems E] [--seconds S] [--period P] */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ts_hang.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_self(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

/* A stand-in kernel: y += a * x over `n` floats (the shape of the example
 * MLP's elementwise ops). noinline: the stores are not folded into it. */
__attribute__((noinline)) static void kernel(float *y, const float *x, int n) {
  for (int i = 0; i < n; i++) y[i] += 0.5f * x[i];
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double run(long instrs, int elems, ts_hang_progress_t *p, float *x, float *y) {
  double t0 = now();
  for (long i = 0; i < instrs; i++) {
    if (p) {
      atomic_store_explicit(&p->instr, (int32_t)(i & 63), memory_order_relaxed);
      atomic_store_explicit(&p->activity, TS_HANG_COMPUTE, memory_order_relaxed);
    }
    kernel(y, x, elems);
    if (p) {
      atomic_fetch_add_explicit(&p->progress, 1, memory_order_relaxed);
      atomic_store_explicit(&p->t_progress_ns, mono_ns(), memory_order_relaxed);
    }
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "hang-coordinator")) return ts_hang_coordinator_main(argc - 1, argv + 1);
  long instrs = 2000000;
  int elems = 1024;
  double seconds = 3, period = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--instrs")) instrs = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--elems")) elems = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--period")) period = atof(argv[i + 1]);
    else {
      fprintf(stderr, "usage: bench_hang [--instrs N] [--elems E] [--seconds S] [--period P]\n");
      return 2;
    }
  }
  if (instrs < 1 || elems < 1 || !(seconds > 0) || !(period > 0)) {
    fprintf(stderr, "bench_hang: error: every value must be positive\n");
    return 2;
  }
  float *x = calloc((size_t)elems, sizeof *x), *y = calloc((size_t)elems, sizeof *y);
  ts_hang_progress_t p;
  memset(&p, 0, sizeof p);
  ts_hang_identity_fill(&p, "bench", 1, 1, 0, 1);

  /* (1) progress stores: best of 5 alternating runs each (the machine is
   * shared: the minimum is the least disturbed), and the stores alone. */
  double bare = 1e30, tracked = 1e30, alone = 1e30;
  for (int r = 0; r < 5; r++) {
    double a = run(instrs, elems, NULL, x, y), b = run(instrs, elems, &p, x, y), c = run(instrs, 0, &p, x, y);
    if (a < bare) bare = a;
    if (b < tracked) tracked = b;
    if (c < alone) alone = c;
  }
  printf("# progress tracking: %ld instructions of a %d-float kernel\n", instrs, elems);
  printf("%-28s %12s %12s\n", "", "ns/instr", "overhead");
  printf("%-28s %12.1f %12s\n", "kernel only", bare / instrs * 1e9, "-");
  printf("%-28s %12.1f %11.2f%%\n", "kernel + progress stores", tracked / instrs * 1e9,
         (tracked - bare) / bare * 100);
  printf("%-28s %12.1f %11.2f%%\n", "progress stores alone", alone / instrs * 1e9, alone / bare * 100);

  /* (3) one snapshot (what every heartbeat reads). */
  ts_hang_state_t s;
  int nsnap = 100000;
  double t0 = now();
  for (int i = 0; i < nsnap; i++) ts_hang_progress_snapshot(&p, &s);
  printf("\n# heartbeat snapshot: %.0f ns each\n", (now() - t0) / nsnap * 1e9);

  /* (2) the heartbeat thread against a coordinator process. */
  char secret[33], addr[160];
  ts_hang_secret_generate(secret);
  ts_hang_coord_opts_t co;
  ts_hang_coord_opts_default(&co);
  co.world = 1;
  co.secret = secret;
  co.hang_timeout_s = 600;
  co.quiet = true;
  pid_t pid;
  ts_diag_t diag = {0};
  if (ts_hang_coordinator_spawn(&co, NULL, addr, sizeof addr, &pid, &diag) != TS_OK) {
    fprintf(stderr, "bench_hang: %s\n", diag.text);
    return 1;
  }
  ts_hang_worker_opts_t wo;
  ts_hang_worker_opts_default(&wo);
  wo.addr = addr;
  wo.secret = secret;
  wo.progress = &p;
  wo.period_s = period;
  ts_hang_worker_t *w;
  if (ts_hang_worker_start(&wo, &w, &diag) != TS_OK) {
    fprintf(stderr, "bench_hang: %s\n", diag.text);
    return 1;
  }
  double c0 = cpu_self(), w0 = now();
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL); /* the main thread sleeps: CPU time is the heartbeat thread's */
  double cpu = cpu_self() - c0, wall = now() - w0;
  atomic_store(&p.activity, TS_HANG_FINISHED);
  ts_hang_worker_stop(w, 2);
  ts_hang_worker_destroy(w);
  int code;
  ts_hang_coordinator_wait(pid, 5, &code);
  printf("\n# heartbeat thread: period %.3f s over %.1f s\n", period, wall);
  printf("%-28s %12.3f ms/s (%.4f%% of one core)\n", "CPU time", cpu / wall * 1e3, cpu / wall * 100);
  printf("coordinator exit code %d\n", code);
  free(x);
  free(y);
  return 0;
}
