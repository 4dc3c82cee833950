/* Collectives on the in-process threads backend: iota groups, XLA's group
 * modes, the whole correctness matrix at 1, 2, 3, 4 and 8 ranks (and with
 * two slices at 4 and 8: the hierarchical algorithms), async
 * post/test/wait, records, bad arguments, ts_coll_alloc, a deadline (one rank never
 * joins and the others get an error within the deadline), and an abort in the
 * middle of large direct all-reduces: nobody touches a rank's buffers once it
 * has left. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_matrix.h"
#include "ts_coll.h"
#include "ts_test.h"

/* ---- harness: N threads, one communicator each ---- */

typedef struct {
  pthread_barrier_t b;
  _Atomic int64_t acc;
} tsum_t;

static int64_t tsum(int64_t local, void *ctx) {
  tsum_t *s = ctx;
  atomic_fetch_add(&s->acc, local);
  pthread_barrier_wait(&s->b);
  int64_t total = atomic_load(&s->acc);
  if (pthread_barrier_wait(&s->b) == PTHREAD_BARRIER_SERIAL_THREAD) atomic_store(&s->acc, 0);
  pthread_barrier_wait(&s->b);
  return total;
}

typedef struct world world_t;
typedef void (*body_fn)(world_t *w, int rank);
struct world {
  int n;
  ts_coll_comm_t **comms;
  tsum_t sum;
  body_fn body;
  _Atomic int failures;
  void *ctx;
};
typedef struct {
  world_t *w;
  int rank;
} targ_t;

static void *thread_main(void *p) {
  targ_t *a = p;
  a->w->body(a->w, a->rank);
  return NULL;
}

static void run_world(int n, body_fn body, void *ctx) {
  world_t w = {.n = n, .body = body, .ctx = ctx};
  w.comms = calloc((size_t)n, sizeof *w.comms);
  EXPECT_EQ(ts_coll_comm_create_threads(n, w.comms), TS_OK);
  pthread_barrier_init(&w.sum.b, NULL, (unsigned)n);
  atomic_init(&w.sum.acc, 0);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  targ_t *args = calloc((size_t)n, sizeof *args);
  for (int i = 0; i < n; i++) {
    args[i] = (targ_t){&w, i};
    pthread_create(&th[i], NULL, thread_main, &args[i]);
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) ts_coll_comm_destroy(w.comms[i]);
  pthread_barrier_destroy(&w.sum.b);
  failures += atomic_load(&w.failures);
  free(th);
  free(args);
  free(w.comms);
}

#define TEXPECT(w, cond)                                                           \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: FAIL (rank %d): %s\n", __FILE__, __LINE__, rank, #cond); \
      atomic_fetch_add(&(w)->failures, 1);                                         \
    }                                                                              \
  } while (0)

/* ---- iota groups ---- */

static void test_iota(void) {
  int64_t out[8];
  int64_t r1[2] = {4, 2}, p1[2] = {1, 0};
  EXPECT_EQ(ts_coll_iota_groups(2, 4, r1, 2, p1, 2, out), TS_OK);
  int64_t want1[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  EXPECT_EQ(memcmp(out, want1, sizeof want1), 0);
  int64_t r2[2] = {2, 4};
  EXPECT_EQ(ts_coll_iota_groups(4, 2, r2, 2, p1, 2, out), TS_OK);
  int64_t want2[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  EXPECT_EQ(memcmp(out, want2, sizeof want2), 0);
  int64_t r3[1] = {8};
  EXPECT_EQ(ts_coll_iota_groups(1, 8, r3, 1, NULL, 0, out), TS_OK);
  for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], i);
  EXPECT_EQ(ts_coll_iota_groups(2, 4, r3, 1, NULL, 0, out), TS_OK);
  EXPECT_EQ(ts_coll_iota_groups(3, 4, r3, 1, NULL, 0, out), TS_ERR_INVALID_ARGUMENT);
  int64_t bad[2] = {0, 0};
  EXPECT_EQ(ts_coll_iota_groups(2, 4, r1, 2, bad, 2, out), TS_ERR_INVALID_ARGUMENT);
}

/* ---- group modes: 8 devices = 2 replicas x 4 partitions ---- */

static ts_i64_list_t *mk_groups(int ng, const int64_t *const *g, const int *sizes) {
  ts_i64_list_t *rg = calloc((size_t)ng, sizeof *rg);
  for (int i = 0; i < ng; i++) {
    rg[i].v = (int64_t *)g[i];
    rg[i].n = sizes[i];
  }
  return rg;
}

static void expect_members(world_t *w, int rank, ts_coll_comm_t *c, const int *want, int n) {
  TEXPECT(w, c && ts_coll_comm_size(c) == n);
  if (!c || ts_coll_comm_size(c) != n) return;
  for (int i = 0; i < n; i++) TEXPECT(w, ts_coll_comm_world_rank(c, i) == want[i]);
  TEXPECT(w, ts_coll_comm_world_rank(c, ts_coll_comm_rank(c)) == rank);
}

static void body_modes(world_t *w, int rank) {
  ts_coll_comm_t *world = w->comms[rank], *c = NULL;
  int rep = rank / 4, part = rank % 4;
  /* cross-replica {{0,1}}: my partition in both replicas */
  static const int64_t g01[] = {0, 1};
  const int64_t *gs1[] = {g01};
  int s1[] = {2};
  ts_i64_list_t *rg = mk_groups(1, gs1, s1);
  TEXPECT(w, ts_coll_comm_split(world, rg, 1, TS_COLL_CROSS_REPLICA, 2, 4, &c) == TS_OK);
  int want1[2] = {part, 4 + part};
  expect_members(w, rank, c, want1, 2);
  ts_coll_comm_destroy(c);
  free(rg);
  /* cross-partition {{0,1},{2,3}}: within my replica */
  static const int64_t a[] = {0, 1}, b[] = {2, 3};
  const int64_t *gs2[] = {a, b};
  int s2[] = {2, 2};
  rg = mk_groups(2, gs2, s2);
  TEXPECT(w, ts_coll_comm_split(world, rg, 2, TS_COLL_CROSS_PARTITION, 2, 4, &c) == TS_OK);
  int base = rep * 4 + (part / 2) * 2;
  int want2[2] = {base, base + 1};
  expect_members(w, rank, c, want2, 2);
  ts_coll_comm_destroy(c);
  free(rg);
  /* cross-replica-and-partition {{0},{1}}: all partitions of my replica */
  static const int64_t z[] = {0}, o[] = {1};
  const int64_t *gs3[] = {z, o};
  int s3[] = {1, 1};
  rg = mk_groups(2, gs3, s3);
  TEXPECT(w, ts_coll_comm_split(world, rg, 2, TS_COLL_CROSS_REPLICA_AND_PARTITION, 2, 4, &c) == TS_OK);
  int want3[4] = {rep * 4, rep * 4 + 1, rep * 4 + 2, rep * 4 + 3};
  expect_members(w, rank, c, want3, 4);
  /* an all-reduce inside it: sum of world ranks of my replica */
  int32_t x = rank, y = -1;
  TEXPECT(w, ts_coll_allreduce(c, &x, &y, 1, TS_S32, TS_COLL_SUM) == TS_OK);
  TEXPECT(w, y == rep * 16 + 6);
  ts_coll_comm_destroy(c);
  free(rg);
  /* flattened ids, unordered: {{7,0},{1,2,3,4,5,6}} */
  static const int64_t f1[] = {7, 0}, f2[] = {1, 2, 3, 4, 5, 6};
  const int64_t *gs4[] = {f1, f2};
  int s4[] = {2, 6};
  rg = mk_groups(2, gs4, s4);
  TEXPECT(w, ts_coll_comm_split(world, rg, 2, TS_COLL_FLATTENED_ID, 1, 8, &c) == TS_OK);
  if (rank == 0 || rank == 7) {
    int want4[2] = {7, 0};
    expect_members(w, rank, c, want4, 2);
    TEXPECT(w, ts_coll_comm_rank(c) == (rank == 7 ? 0 : 1));
  } else {
    int want4[6] = {1, 2, 3, 4, 5, 6};
    expect_members(w, rank, c, want4, 6);
  }
  ts_coll_comm_destroy(c);
  free(rg);
  /* an id twice: every rank gets INVALID_ARGUMENT, none hangs */
  static const int64_t d1[] = {0, 1, 2, 3}, d2[] = {3, 4, 5, 6, 7};
  const int64_t *gs5[] = {d1, d2};
  int s5[] = {4, 5};
  rg = mk_groups(2, gs5, s5);
  c = NULL;
  TEXPECT(w, ts_coll_comm_split(world, rg, 2, TS_COLL_FLATTENED_ID, 1, 8, &c) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, c == NULL);
  free(rg);
  /* sizes that do not multiply to the world */
  TEXPECT(w, ts_coll_comm_split(world, NULL, 0, TS_COLL_CROSS_REPLICA, 3, 3, &c) == TS_ERR_INVALID_ARGUMENT);
}

/* ---- the matrix ---- */

static bool quick;

static void body_matrix(world_t *w, int rank) {
  coll_matrix_opts_t o = {.sum = tsum, .sum_ctx = &w->sum, .report = NULL, .quick = quick};
  if (getenv("TS_COLL_VERBOSE")) o.report = stdout;
  int failed = coll_matrix_run(w->comms[rank], &o);
  if (rank == 0 && failed) {
    fprintf(stderr, "matrix n=%d: %d cases failed\n", w->n, failed);
    atomic_fetch_add(&w->failures, failed);
  }
}

/* The same with the direct path off: the point-to-point algorithms only. */
static void body_matrix_p2p(world_t *w, int rank) {
  ts_coll_comm_set_direct(w->comms[rank], false);
  body_matrix(w, rank);
}

/* Two slices: hierarchical all-reduce, all-gather and reduce-scatter on the
 * world against the same closed-form results as the flat algorithms. */
static void body_matrix_slices(world_t *w, int rank) {
  ts_coll_comm_t *c = w->comms[rank];
  TEXPECT(w, ts_coll_comm_slices(c) == 1);
  TEXPECT(w, ts_coll_comm_set_slices(c, 3) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, ts_coll_comm_set_slices(c, 0) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, ts_coll_comm_slices(c) == 1);
  coll_matrix_opts_t o = {.sum = tsum, .sum_ctx = &w->sum, .report = NULL, .quick = quick, .slices = 2};
  if (getenv("TS_COLL_VERBOSE")) o.report = stdout;
  int failed = coll_matrix_run(c, &o);
  if (rank == 0 && failed) {
    fprintf(stderr, "matrix n=%d slices=2: %d cases failed\n", w->n, failed);
    atomic_fetch_add(&w->failures, failed);
  }
  TEXPECT(w, ts_coll_comm_slices(c) == 1);
}

static void body_matrix_slices_p2p(world_t *w, int rank) {
  ts_coll_comm_set_direct(w->comms[rank], false);
  body_matrix_slices(w, rank);
}

/* ---- async, records, bad arguments ---- */

static void body_async(world_t *w, int rank) {
  ts_coll_comm_t *c = w->comms[rank];
  int n = w->n;
  float a[3][16], out[3][16];
  ts_coll_req_t *req[3];
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 16; i++) a[k][i] = (float)(rank + k + i);
    TEXPECT(w, ts_coll_allreduce_post(c, a[k], out[k], 16, TS_F32, TS_COLL_SUM, &req[k]) == TS_OK);
  }
  /* wait in reverse order: operations still run in post order */
  for (int k = 2; k >= 0; k--) TEXPECT(w, ts_coll_wait(req[k], 30) == TS_OK);
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 16; i++) TEXPECT(w, out[k][i] == (float)(n * (k + i) + n * (n - 1) / 2));
  /* test() alone completes an operation (the progress thread runs it) */
  ts_coll_req_t *r;
  TEXPECT(w, ts_coll_barrier_post(c, &r) == TS_OK);
  double t0 = ts_coll_now();
  ts_status_t st;
  while ((st = ts_coll_test(r)) == TS_INPROGRESS && ts_coll_now() - t0 < 30) {
  }
  TEXPECT(w, st == TS_OK);
  ts_coll_req_free(r);
  /* records: the last five, oldest first, completed, with their kinds */
  ts_coll_record_t rec[8];
  size_t nr = ts_coll_records(c, rec, 8);
  TEXPECT(w, nr == 4);
  if (nr == 4) {
    for (size_t i = 0; i < nr; i++) {
      TEXPECT(w, rec[i].seq == i + 1);
      TEXPECT(w, rec[i].state == TS_COLL_COMPLETED);
      TEXPECT(w, rec[i].t_posted > 0 && rec[i].t_started >= rec[i].t_posted && rec[i].t_completed >= rec[i].t_started);
    }
    TEXPECT(w, rec[0].kind == TS_COLL_ALL_REDUCE && rec[0].bytes == 64 && rec[0].type == TS_F32);
    TEXPECT(w, rec[3].kind == TS_COLL_BARRIER);
    TEXPECT(w, strcmp(rec[0].algorithm, "direct") == 0);
  }
  /* bad arguments fail at post, on every rank alike */
  float cx[4];
  TEXPECT(w, ts_coll_allreduce_post(c, cx, cx, 2, TS_C64, TS_COLL_MAX, &r) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, ts_coll_broadcast_post(c, cx, cx, 1, TS_F32, n, &r) == TS_ERR_INVALID_ARGUMENT);
  int64_t dup[2][2] = {{0, 1}, {1, 1}};
  TEXPECT(w, ts_coll_permute_post(c, cx, cx, 1, TS_F32, (const int64_t(*)[2])dup, 2, &r) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, ts_coll_allreduce_post(c, cx, cx, 1, TS_TUPLE, TS_COLL_SUM, &r) == TS_ERR_INVALID_ARGUMENT);
  TEXPECT(w, ts_coll_comm_force_algorithm(c, "no-such-algorithm") == TS_ERR_INVALID_ARGUMENT);
}

/* ---- ts_coll_alloc in an in-process world: ordinary memory that works ---- */

static void body_alloc(world_t *w, int rank) {
  ts_coll_comm_t *c = w->comms[rank];
  int n = w->n;
  size_t count = 300000; /* above the eager size */
  float *x = NULL, *y = NULL;
  TEXPECT(w, ts_coll_alloc(c, count * sizeof *x, (void **)&x) == TS_OK && x);
  TEXPECT(w, ts_coll_alloc(c, count * sizeof *y, (void **)&y) == TS_OK && y);
  if (!x || !y) return;
  TEXPECT(w, ((uintptr_t)x & 4095) == 0);
  for (size_t i = 0; i < count; i++) x[i] = (float)((size_t)rank + i % 7);
  TEXPECT(w, ts_coll_allreduce(c, x, y, count, TS_F32, TS_COLL_SUM) == TS_OK);
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) bad += y[i] != (float)((size_t)n * (i % 7) + (size_t)n * (size_t)(n - 1) / 2);
  TEXPECT(w, bad == 0);
  ts_coll_free(c, x);
  ts_coll_free(c, y);
  ts_coll_free(c, NULL);
  void *p;
  TEXPECT(w, ts_coll_alloc(NULL, 16, &p) == TS_ERR_INVALID_ARGUMENT && p == NULL);
}

/* ---- deadline: rank n-1 never joins ---- */

static void body_deadline(world_t *w, int rank) {
  ts_coll_comm_t *c = w->comms[rank];
  const char *algo = w->ctx;
  TEXPECT(w, ts_coll_comm_force_algorithm(c, algo) == TS_OK);
  /* the hierarchical steps wait under the all-reduce's deadline too */
  if (strcmp(algo, "hierarchical") == 0) TEXPECT(w, ts_coll_comm_set_slices(c, 2) == TS_OK);
  ts_coll_comm_set_timeout(c, 0.5);
  if (rank == w->n - 1) {
    /* never joins; after the others' deadline the world reads aborted */
    double t0 = ts_coll_now();
    while (ts_coll_comm_status(c) == TS_OK && ts_coll_now() - t0 < 10) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    TEXPECT(w, ts_coll_comm_status(c) != TS_OK);
    /* later posts fail at once */
    ts_coll_req_t *r;
    TEXPECT(w, ts_coll_barrier_post(c, &r) < 0);
    return;
  }
  float x[1000] = {0}, y[1000];
  double t0 = ts_coll_now();
  ts_status_t st = ts_coll_allreduce(c, x, y, 1000, TS_F32, TS_COLL_SUM);
  double dt = ts_coll_now() - t0;
  TEXPECT(w, st == TS_ERR_TIMEOUT || st == TS_ERR_REMOTE);
  TEXPECT(w, dt < 3.0);
  ts_coll_record_t rec;
  TEXPECT(w, ts_coll_records(c, &rec, 1) == 1 && rec.state == TS_COLL_FAILED);
  TEXPECT(w, strcmp(rec.algorithm, algo) == 0);
}

/* ---- abort mid-operation: once a rank's call returned, its buffers are its own ---- */

typedef struct {
  ts_coll_comm_t *c;
  long delay_us;
} aborter_t;

static void *abort_later(void *p) {
  aborter_t *a = p;
  struct timespec ts = {a->delay_us / 1000000, a->delay_us % 1000000 * 1000};
  nanosleep(&ts, NULL);
  ts_coll_comm_abort(a->c, TS_ERR_REMOTE);
  return NULL;
}

static void body_abort_free(world_t *w, int rank) {
  ts_coll_comm_t *c = w->comms[rank];
  TEXPECT(w, ts_coll_comm_force_algorithm(c, "direct") == TS_OK);
  size_t count = (size_t)4 << 20; /* 16 MiB: the abort lands while peers move data */
  float *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
  if (!x || !y) abort();
  for (size_t i = 0; i < count; i++) x[i] = 1.0f;
  pthread_t th;
  aborter_t ab = {c, *(long *)w->ctx};
  if (rank == 0) pthread_create(&th, NULL, abort_later, &ab);
  ts_status_t st = TS_OK;
  for (int it = 0; it < 1000 && st == TS_OK; it++) st = ts_coll_allreduce(c, x, y, count, TS_F32, TS_COLL_SUM);
  TEXPECT(w, st == TS_ERR_REMOTE);
  /* peers still storing into y after we returned would overwrite this */
  memset(y, 0x5a, count * sizeof *y);
  memset(x, 0x5a, count * sizeof *x);
  struct timespec nap = {0, 50 * 1000000};
  nanosleep(&nap, NULL);
  size_t touched = 0;
  const unsigned char *b = (const unsigned char *)y;
  for (size_t i = 0; i < count * sizeof *y; i++) touched += b[i] != 0x5a;
  TEXPECT(w, touched == 0);
  if (rank == 0) pthread_join(th, NULL);
  /* under ASan, peers still reading x or y read freed memory */
  free(x);
  free(y);
}

int main(void) {
  quick = getenv("TS_COLL_QUICK") != NULL;
  test_iota();
  run_world(8, body_modes, NULL);
  static const int sizes[] = {1, 2, 3, 4, 8};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    run_world(sizes[i], body_matrix, NULL);
    run_world(sizes[i], body_matrix_p2p, NULL);
  }
  run_world(4, body_matrix_slices, NULL);
  run_world(8, body_matrix_slices, NULL);
  run_world(4, body_matrix_slices_p2p, NULL);
  run_world(4, body_async, NULL);
  run_world(3, body_alloc, NULL);
  run_world(4, body_deadline, (void *)"direct");
  run_world(4, body_deadline, (void *)"ring");
  run_world(3, body_deadline, (void *)"recursive-doubling");
  run_world(4, body_deadline, (void *)"hierarchical");
  static long abort_delays_us[] = {2000, 9000, 23000};
  for (size_t i = 0; i < sizeof abort_delays_us / sizeof abort_delays_us[0]; i++)
    run_world(4, body_abort_free, &abort_delays_us[i]);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
