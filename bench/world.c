/* Worlds for the collective benchmarks: in-process thread ranks and the
 * mpirun world, with the communicator set-up and error reports they share. */
#include "ts_bench.h"

#include <pthread.h>
#include <stdlib.h>

bool ts_bench_parse_size(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !(v > 0)) return false;
  int64_t m = 1;
  if (*end == 'K' || *end == 'k') m = 1024, end++;
  else if (*end == 'M' || *end == 'm') m = 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g') m = 1024 * 1024 * 1024, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v * (double)m > 8.0 * 1024 * 1024 * 1024) return false;
  *out = (int64_t)(v * (double)m);
  return *out > 0;
}

bool ts_bench_under_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

typedef struct {
  ts_bench_rank_fn fn;
  void *arg;
  ts_coll_comm_t *comm;
  int rc;
} thread_rank_t;

static void *thread_main(void *p) {
  thread_rank_t *t = p;
  t->rc = t->fn(t->arg, t->comm, false);
  return NULL;
}

int ts_bench_world_threads(const char *cmd, int n, ts_bench_rank_fn fn, void *arg) {
  ts_coll_comm_t **comms = calloc((size_t)n, sizeof *comms);
  thread_rank_t *ranks = calloc((size_t)n, sizeof *ranks);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  int rc = 0;
  ts_status_t st = comms && ranks && th ? ts_coll_comm_create_threads(n, comms) : TS_ERR_NOMEM;
  if (st) {
    fprintf(stderr, "%s: error: cannot create %d in-process ranks: %s\n", cmd, n, ts_status_string(st));
    rc = ts_status_exit_code(st);
  } else {
    int started = 0;
    for (int i = 0; i < n; i++) {
      ranks[i] = (thread_rank_t){.fn = fn, .arg = arg, .comm = comms[i]};
      if (pthread_create(&th[i], NULL, thread_main, &ranks[i]) != 0) {
        /* The ranks already running wait for this one until their deadline,
         * then fail: abort the world so they return now. */
        fprintf(stderr, "%s: error: cannot start the thread of rank %d\n", cmd, i);
        ts_coll_comm_abort(comms[0], TS_ERR_SYSTEM);
        rc = 4;
        break;
      }
      started++;
    }
    for (int i = 0; i < started; i++) {
      pthread_join(th[i], NULL);
      if (ranks[i].rc > rc) rc = ranks[i].rc;
    }
    for (int i = 0; i < n; i++) ts_coll_comm_destroy(comms[i]);
  }
  free(comms);
  free(ranks);
  free(th);
  return rc;
}

int ts_bench_world_mpi(const char *cmd, ts_coll_backend_t backend, int *argc, char ***argv, ts_bench_rank_fn fn,
                      void *arg) {
  if (!ts_coll_backend_built(TS_COLL_BACKEND_MPI)) {
    fprintf(stderr, "%s: error: this build has no MPI: only --backend=threads can run\n", cmd);
    return 3;
  }
  if (!ts_coll_backend_built(backend)) {
    fprintf(stderr, "%s: error: backend '%s' is not in this build\n", cmd, ts_coll_backend_name(backend));
    return 3;
  }
  ts_status_t st = ts_coll_mpi_init(argc, argv);
  if (st) {
    fprintf(stderr, "%s: error: cannot initialise MPI: %s\n", cmd, ts_status_string(st));
    return 3;
  }
  ts_coll_comm_t *c = NULL;
  st = ts_coll_comm_create_mpi(backend, &c);
  int rc;
  if (st) {
    fprintf(stderr, "%s: error: cannot create the %s communicator: %s\n", cmd, ts_coll_backend_name(backend),
            ts_status_string(st));
    rc = st == TS_ERR_UNSUPPORTED ? 3 : ts_status_exit_code(st);
  } else {
    ts_log_set_rank(ts_coll_comm_rank(c));
    rc = fn(arg, c, true);
    ts_coll_comm_destroy(c);
  }
  ts_coll_mpi_finalize();
  return rc;
}
