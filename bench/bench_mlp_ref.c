/* bench_mlp_ref: the MLP training step of examples/mlp_train.hlo written by
 * hand in C with cblas_sgemm, as the peer `tessera run` is measured against.
 * A benchmark, not a test: it asserts nothing about speed.
 *
 * Same math as examples/gen_mlp_train.py writes in HLO: xc = x - 0.5; one-hot
 * labels from argmax(xc @ T) (T the iota-built teacher, every tied maximum
 * set, as the HLO's compare does); h = relu(xc @ W1 + b1); logits = h @ (W2 -
 * rowmean(W2)) + b2; mean softmax cross-entropy; backward; SGD. What a
 * person would do differently from the HLO: T is built once, the bias is the
 * gemm's initial C, dW1 goes straight into W1 (alpha = -lr, beta = 1), and
 * every buffer is allocated once.
 *
 * Weights start as the launcher initialises them (rank >= 2 uniform in
 * [-1/sqrt(d0), 1/sqrt(d0)], biases zero) and each step takes a fresh batch
 * uniform in (0, 1] (batches drawn before timing). With --inputs DIR the
 * weights and the batch come from DIR/param<i>.npy (the sizes from their
 * shapes) and every step reuses that batch, so step 1's loss equals
 * `tessera run --devices 1 --inputs DIR`'s; --outputs DIR writes the
 * results of step 1 as out<k>.npy, as `tessera run --outputs` does. */
#include "bench_util.h"
#include "ts_npy.h"

#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NBATCH 8 /* distinct random batches cycled through while timing */

typedef struct {
  int nb, ni, nh, nc; /* batch, input features, hidden units, classes */
  float lr;
  float *w1, *b1, *w2, *b2; /* parameters, updated in place */
  float *x[NBATCH];         /* data batches [B, I] */
  int nx;
  /* scratch, allocated once */
  float *teacher, *xc, *tl, *target, *hpre, *h, *w2c, *logits, *logp, *dlogits, *dw2c, *dh, *colsum;
} mlp_t;

/* SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* uniform in (0, 1] with 24 random bits */
static float unit(uint64_t *s) { return (float)((splitmix(s) >> 40) + 1) * (1.0f / 16777216.0f); }

static void init_params(mlp_t *m, uint64_t seed) {
  float a1 = 1.0f / sqrtf((float)m->ni), a2 = 1.0f / sqrtf((float)m->nh);
  for (int k = 0; k < m->ni * m->nh; k++) m->w1[k] = a1 * (2 * unit(&seed) - 1);
  for (int k = 0; k < m->nh * m->nc; k++) m->w2[k] = a2 * (2 * unit(&seed) - 1);
  memset(m->b1, 0, (size_t)m->nh * sizeof(float));
  memset(m->b2, 0, (size_t)m->nc * sizeof(float));
  for (int b = 0; b < m->nx; b++)
    for (int k = 0; k < m->nb * m->ni; k++) m->x[b][k] = unit(&seed);
}

/* One training step on batch x; returns the loss (before the update). */
static float mlp_step(mlp_t *m, const float *x) {
  const int B = m->nb, NI = m->ni, H = m->nh, C = m->nc;
  for (int k = 0; k < B * NI; k++) m->xc[k] = x[k] - 0.5f;

  /* labels: one-hot of the teacher's argmax, every tied maximum set */
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, C, NI, 1.0f, m->xc, NI, m->teacher, C, 0.0f, m->tl, C);
  for (int b = 0; b < B; b++) {
    const float *r = m->tl + b * C;
    float mx = -INFINITY;
    for (int c = 0; c < C; c++) mx = fmaxf(mx, r[c]);
    for (int c = 0; c < C; c++) m->target[b * C + c] = r[c] == mx ? 1.0f : 0.0f;
  }

  /* forward */
  for (int b = 0; b < B; b++) memcpy(m->hpre + (size_t)b * H, m->b1, (size_t)H * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, NI, 1.0f, m->xc, NI, m->w1, H, 1.0f, m->hpre, H);
  for (int k = 0; k < B * H; k++) m->h[k] = m->hpre[k] > 0 ? m->hpre[k] : 0.0f;
  for (int j = 0; j < H; j++) {
    float s = 0;
    for (int c = 0; c < C; c++) s += m->w2[j * C + c];
    for (int c = 0; c < C; c++) m->w2c[j * C + c] = m->w2[j * C + c] - s / (float)C;
  }
  for (int b = 0; b < B; b++) memcpy(m->logits + (size_t)b * C, m->b2, (size_t)C * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, C, H, 1.0f, m->h, H, m->w2c, C, 1.0f, m->logits, C);

  /* log-softmax, loss, and d loss / d logits = (softmax * rowsum(t) - t) / B */
  float total = 0;
  for (int b = 0; b < B; b++) {
    const float *z = m->logits + b * C;
    float *lp = m->logp + b * C, *t = m->target + b * C, *d = m->dlogits + b * C;
    float mx = -INFINITY, se = 0, ts = 0;
    for (int c = 0; c < C; c++) mx = fmaxf(mx, z[c]);
    for (int c = 0; c < C; c++) se += expf(z[c] - mx);
    float lse = logf(se);
    for (int c = 0; c < C; c++) {
      lp[c] = z[c] - mx - lse;
      total += t[c] * lp[c];
      ts += t[c];
    }
    for (int c = 0; c < C; c++) d[c] = (expf(lp[c]) * ts - t[c]) / (float)B;
  }
  float loss = -total / (float)B;

  /* backward, with the updates folded in where a gemm allows it */
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, C, B, 1.0f, m->h, H, m->dlogits, C, 0.0f, m->dw2c, C);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, C, 1.0f, m->dlogits, C, m->w2c, C, 0.0f, m->dh, H);
  for (int k = 0; k < B * H; k++)
    if (!(m->hpre[k] > 0)) m->dh[k] = 0.0f;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, NI, H, B, -m->lr, m->xc, NI, m->dh, H, 1.0f, m->w1, H);
  memset(m->colsum, 0, (size_t)H * sizeof(float));
  for (int b = 0; b < B; b++)
    for (int j = 0; j < H; j++) m->colsum[j] += m->dh[b * H + j];
  for (int j = 0; j < H; j++) m->b1[j] -= m->lr * m->colsum[j];
  for (int j = 0; j < H; j++) {
    float s = 0;
    for (int c = 0; c < C; c++) s += m->dw2c[j * C + c];
    for (int c = 0; c < C; c++) m->w2[j * C + c] -= m->lr * (m->dw2c[j * C + c] - s / (float)C);
  }
  for (int c = 0; c < C; c++) {
    float s = 0;
    for (int b = 0; b < B; b++) s += m->dlogits[b * C + c];
    m->b2[c] -= m->lr * s;
  }
  return loss;
}

static void mlp_free(mlp_t *m) {
  float **bufs[] = {&m->w1, &m->b1, &m->w2, &m->b2, &m->teacher, &m->xc, &m->tl, &m->target, &m->hpre,
                    &m->h, &m->w2c, &m->logits, &m->logp, &m->dlogits, &m->dw2c, &m->dh, &m->colsum};
  for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) ts_free(*bufs[k]), *bufs[k] = NULL;
  for (int b = 0; b < NBATCH; b++) ts_free(m->x[b]), m->x[b] = NULL;
}

static bool mlp_alloc(mlp_t *m, int nx) {
  const size_t B = (size_t)m->nb, NI = (size_t)m->ni, H = (size_t)m->nh, C = (size_t)m->nc;
  struct {
    float **p;
    size_t n;
  } bufs[] = {{&m->w1, NI * H}, {&m->b1, H},      {&m->w2, H * C},     {&m->b2, C},        {&m->teacher, NI * C},
              {&m->xc, B * NI}, {&m->tl, B * C},  {&m->target, B * C}, {&m->hpre, B * H},  {&m->h, B * H},
              {&m->w2c, H * C}, {&m->logits, B * C}, {&m->logp, B * C}, {&m->dlogits, B * C}, {&m->dw2c, H * C},
              {&m->dh, B * H}, {&m->colsum, H}};
  for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
    if (!(*bufs[k].p = ts_malloc(bufs[k].n * sizeof(float)))) return false;
  m->nx = nx;
  for (int b = 0; b < nx; b++)
    if (!(m->x[b] = ts_malloc(B * NI * sizeof(float)))) return false;
  /* teacher(i, c) = (((7 i + 13 c + 3 i c) mod 17) - 8) / 8, as the HLO builds it */
  for (int i = 0; i < m->ni; i++)
    for (int c = 0; c < m->nc; c++) m->teacher[i * m->nc + c] = (float)((7 * i + 13 * c + 3 * i * c) % 17 - 8) / 8.0f;
  return true;
}

/* Reads DIR/param<k>.npy into dst (f32, the given dims). */
static bool load_param(const char *dir, int k, int rank, const int64_t *dims, float *dst) {
  char path[4096];
  snprintf(path, sizeof path, "%s/param%d.npy", dir, k);
  ts_npy_array_t a = {0};
  ts_diag_t d = {0};
  bool ok = ts_npy_read_as(path, TS_F32, &a, &d) == TS_OK;
  if (!ok) fputs(d.text ? d.text : "bench_mlp_ref: cannot read a parameter\n", stderr);
  ok = ok && a.rank == rank;
  for (int r = 0; ok && r < rank; r++) ok = a.dims[r] == dims[r];
  if (ok)
    memcpy(dst, a.data, a.nbytes);
  else if (!d.text)
    fprintf(stderr, "bench_mlp_ref: %s: shape does not fit the MLP\n", path);
  ts_diag_free(&d);
  ts_npy_free(&a);
  return ok;
}

/* Sizes from DIR/param0.npy (W1 [I, H]), param2 (W2 [H, C]), param4 (x [B, I]). */
static bool sizes_from(const char *dir, mlp_t *m) {
  int64_t got[3][2];
  const int which[3] = {0, 2, 4};
  for (int k = 0; k < 3; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/param%d.npy", dir, which[k]);
    ts_npy_array_t a = {0};
    ts_diag_t d = {0};
    ts_status_t st = ts_npy_read(path, &a, &d);
    if (st != TS_OK) fputs(d.text ? d.text : "bench_mlp_ref: cannot read a parameter\n", stderr);
    bool ok = st == TS_OK && a.rank == 2;
    if (ok) got[k][0] = a.dims[0], got[k][1] = a.dims[1];
    ts_diag_free(&d);
    ts_npy_free(&a);
    if (!ok) {
      if (st == TS_OK) fprintf(stderr, "bench_mlp_ref: %s is not a matrix\n", path);
      return false;
    }
  }
  m->ni = (int)got[0][0], m->nh = (int)got[0][1], m->nc = (int)got[1][1], m->nb = (int)got[2][0];
  return true;
}

static bool write_outputs(const char *dir, const mlp_t *m, float loss) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "bench_mlp_ref: cannot create '%s': %s\n", dir, strerror(errno));
    return false;
  }
  const struct {
    int rank;
    int64_t dims[2];
    const float *data;
  } outs[] = {{0, {0, 0}, &loss},
              {2, {m->ni, m->nh}, m->w1},
              {1, {m->nh, 0}, m->b1},
              {2, {m->nh, m->nc}, m->w2},
              {1, {m->nc, 0}, m->b2}};
  for (int k = 0; k < 5; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.npy", dir, k);
    ts_diag_t d = {0};
    ts_status_t st = ts_npy_write(path, TS_F32, outs[k].rank, outs[k].dims, outs[k].data, &d);
    if (st != TS_OK) fputs(d.text ? d.text : "bench_mlp_ref: cannot write an output\n", stderr);
    ts_diag_free(&d);
    if (st != TS_OK) return false;
  }
  return true;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_mlp_ref [--batch N] [--in N] [--hidden N] [--classes N] [--lr X]\n"
          "                     [--losses K] [--reps N] [--threads T] [--seed S]\n"
          "                     [--inputs DIR] [--outputs DIR]\n"
          "The MLP training step of examples/mlp_train.hlo in C + cblas_sgemm (sizes default\n"
          "to that file's: 64, 256, 512, 16, lr 1.5). Prints the loss of the first K steps\n"
          "(default 5) of a training run from the launcher's init, then times N more steps\n"
          "(default 100, at most %d) after 3 warm-up steps and prints the median and best\n"
          "step_ms. --threads sets OpenBLAS's threads (default 1). --inputs DIR reads\n"
          "W1, b1, W2, b2, x from DIR/param<i>.npy (sizes from their shapes); --outputs DIR\n"
          "writes step 1's loss and weights as out<k>.npy.\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  long long nb = 64, ni = 256, nh = 512, nc = 16, nlosses = 5, nreps = 100, nthreads = 1, seed = 0;
  double lr = 1.5;
  const char *inputs = NULL, *outputs = NULL;
  const ts_bench_opt_t opts[] = {
      TS_BENCH_INT("batch", &nb, 1, 1 << 20),
      TS_BENCH_INT("in", &ni, 1, 1 << 20),
      TS_BENCH_INT("hidden", &nh, 1, 1 << 20),
      TS_BENCH_INT("classes", &nc, 1, 1 << 20),
      TS_BENCH_REAL("lr", &lr, 0, 1e6),
      TS_BENCH_INT("losses", &nlosses, 0, 1 << 20),
      TS_BENCH_INT("reps", &nreps, 1, TS_BENCH_MAX_REPS),
      TS_BENCH_INT("threads", &nthreads, 1, 1 << 20),
      TS_BENCH_INT("seed", &seed, 0, 1 << 20),
      TS_BENCH_TEXT("inputs", &inputs),
      TS_BENCH_TEXT("outputs", &outputs),
  };
  int early = ts_bench_opts(argc, argv, "bench_mlp_ref", usage, opts, (int)(sizeof opts / sizeof opts[0]));
  if (early >= 0) return early;
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  mlp_t m = {.nb = (int)nb, .ni = (int)ni, .nh = (int)nh, .nc = (int)nc, .lr = (float)lr};
  int losses = (int)nlosses, reps = (int)nreps, threads = (int)nthreads;
  if (inputs && !sizes_from(inputs, &m)) return 2;
  openblas_set_num_threads(threads);

  int rc = 1;
  if (!mlp_alloc(&m, inputs ? 1 : NBATCH)) {
    fprintf(stderr, "bench_mlp_ref: out of memory\n");
    goto done;
  }
  init_params(&m, (uint64_t)seed);
  if (inputs) {
    const int64_t d_w1[] = {m.ni, m.nh}, d_b1[] = {m.nh}, d_w2[] = {m.nh, m.nc}, d_b2[] = {m.nc}, d_x[] = {m.nb, m.ni};
    if (!load_param(inputs, 0, 2, d_w1, m.w1) || !load_param(inputs, 1, 1, d_b1, m.b1) ||
        !load_param(inputs, 2, 2, d_w2, m.w2) || !load_param(inputs, 3, 1, d_b2, m.b2) ||
        !load_param(inputs, 4, 2, d_x, m.x[0])) {
      rc = 2;
      goto done;
    }
  }

  printf("# bench_mlp_ref: batch %d, in %d, hidden %d, classes %d, lr %g, OpenBLAS threads %d\n", m.nb, m.ni, m.nh,
         m.nc, (double)m.lr, threads);
  /* The first steps of a training run, for comparison with `tessera run`. */
  int step = 0;
  for (; step < (losses > 0 ? losses : (outputs ? 1 : 0)); step++) {
    float loss = mlp_step(&m, m.x[step % m.nx]);
    if (step < losses) printf("step %d loss %.9g\n", step + 1, (double)loss);
    if (step == 0 && outputs && !write_outputs(outputs, &m, loss)) goto done;
  }
  for (int w = 0; w < 3; w++, step++) mlp_step(&m, m.x[step % m.nx]);
  double t[TS_BENCH_MAX_REPS];
  for (int r = 0; r < reps; r++, step++) {
    double t0 = ts_bench_now();
    volatile float loss = mlp_step(&m, m.x[step % m.nx]);
    (void)loss;
    t[r] = ts_bench_now() - t0;
  }
  double best, median;
  ts_bench_best_median(t, reps, &best, &median);
  double flops = 2.0 * m.nb * ((double)m.ni * m.nc + 3.0 * m.ni * m.nh + 3.0 * m.nh * m.nc);
  printf("# %-10s %10s %10s %10s\n", "steps", "step_ms", "best_ms", "GFLOP/s");
  printf("  %-10d %10.3f %10.3f %10.2f\n", reps, median * 1e3, best * 1e3, flops / median / 1e9);
  printf("step_ms %.3f\n", median * 1e3);
  rc = 0;
done:
  mlp_free(&m);
  return rc;
}
