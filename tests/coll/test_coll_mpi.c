/* Collectives under mpirun: one launch checks the whole matrix for one
 * backend and rank count and prints each case (label mpi), or, with
 * --deadline, checks that a rank that never joins makes the others fail
 * within the deadline and that every process still exits cleanly.
 * --alloc=1 takes the buffers from ts_coll_alloc (the mapped direct paths),
 * --alloc=2 on odd ranks only (mixed).
 * --slices=S gives the world S slices (the hierarchical algorithms too).
 *   mpirun -np N test_coll_mpi [--backend=mpi|ucx] [--deadline] [--quick] [--alloc=1|2] [--slices=S] */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_matrix.h"
#include "ts_coll.h"

static int64_t mpi_sum(int64_t local, void *ctx) {
  int64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

/* Rank n-1 never joins an all-reduce; the others must fail within 3 s.
 * With `alloc`, the buffers are large and from ts_coll_alloc (the mapped
 * direct path waits for the missing rank). */
static int deadline_test(ts_coll_comm_t *c, int alloc) {
  int r = ts_coll_comm_rank(c), n = ts_coll_comm_size(c), bad = 0;
  ts_coll_comm_set_timeout(c, 1.0);
  if (r == n - 1) {
    double t0 = ts_coll_now();
    while (ts_coll_comm_status(c) == TS_OK && ts_coll_now() - t0 < 20) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
    if (ts_coll_comm_status(c) == TS_OK) {
      fprintf(stderr, "rank %d: never saw the abort\n", r);
      bad = 1;
    }
    printf("rank %d: did not join; saw the world aborted: %s\n", r, ts_status_string(ts_coll_comm_status(c)));
    return bad;
  }
  float sx[100] = {0}, sy[100], *x = sx, *y = sy;
  size_t count = 100;
  if (alloc) {
    count = 1 << 20;
    if (ts_coll_alloc(c, count * sizeof *x, (void **)&x) != TS_OK ||
        ts_coll_alloc(c, count * sizeof *y, (void **)&y) != TS_OK) {
      fprintf(stderr, "rank %d: ts_coll_alloc failed\n", r);
      return 1;
    }
    memset(x, 0, count * sizeof *x);
  }
  double t0 = ts_coll_now();
  ts_status_t st = ts_coll_allreduce(c, x, y, count, TS_F32, TS_COLL_SUM);
  double dt = ts_coll_now() - t0;
  if (alloc) {
    ts_coll_free(c, x);
    ts_coll_free(c, y);
  }
  printf("rank %d: all-reduce without rank %d: %s after %.2f s\n", r, n - 1, ts_status_string(st), dt);
  if (st != TS_ERR_TIMEOUT && st != TS_ERR_REMOTE) bad = 1;
  if (dt > 3.0) bad = 1;
  return bad;
}

int main(int argc, char **argv) {
  ts_coll_backend_t backend = TS_COLL_BACKEND_MPI;
  bool deadline = false, quick = false;
  int alloc = 0, slices = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--backend=", 10) == 0 && ts_coll_backend_from_name(argv[i] + 10, &backend)) continue;
    if (strcmp(argv[i], "--alloc=1") == 0 || strcmp(argv[i], "--alloc=2") == 0) {
      alloc = argv[i][8] - '0';
      continue;
    }
    if (strncmp(argv[i], "--slices=", 9) == 0) {
      slices = atoi(argv[i] + 9);
      continue;
    }
    if (strcmp(argv[i], "--deadline") == 0) deadline = true;
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fprintf(stderr, "usage: test_coll_mpi [--backend=mpi|ucx] [--deadline] [--quick] [--alloc=1|2] [--slices=S]\n");
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (ts_coll_mpi_init(&argc, &argv) != TS_OK) return 3;
  int wr;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  ts_log_set_rank(wr);
  ts_coll_comm_t *c = NULL;
  ts_status_t st = ts_coll_comm_create_mpi(backend, &c);
  if (st) {
    fprintf(stderr, "rank %d: cannot create the %s communicator: %s\n", wr, ts_coll_backend_name(backend),
            ts_status_string(st));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int bad;
  if (deadline) {
    bad = deadline_test(c, alloc);
  } else {
    coll_matrix_opts_t o = {.sum = mpi_sum, .report = wr == 0 ? stdout : NULL, .quick = quick, .alloc = alloc,
                            .slices = slices};
    if (wr == 0)
      printf("# backend %s, %d ranks, %d slices, direct path %s, buffers %s\n", ts_coll_backend_name(backend),
             ts_coll_comm_size(c), slices > 1 ? slices : 1,
             getenv("TESSERA_COLL_DIRECT") && atoi(getenv("TESSERA_COLL_DIRECT")) == 0 ? "off" : "on",
             alloc == 1 ? "ts_coll_alloc" : alloc == 2 ? "ts_coll_alloc on odd ranks" : "malloc");
    bad = coll_matrix_run(c, &o) != 0;
  }
  ts_coll_comm_destroy(c);
  fflush(stdout);
  ts_coll_mpi_finalize();
  return bad;
}
