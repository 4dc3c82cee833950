/* The correctness matrix (see coll_matrix.h). Inputs are small integers
 * (|x| <= 2, products of {1, 2, -1}), so every reduction is exact in double
 * and in f32 whatever the order; the expected bits are the exact value
 * rounded once to the type, computed here independently of the library. */
#include "coll_matrix.h"

#include <stdlib.h>
#include <string.h>

#define CANARY 64

static const ts_elem_t all_types[] = {TS_F32, TS_BF16, TS_F16, TS_F8E4M3FN, TS_F64, TS_S32,
                                      TS_S4,  TS_U8,   TS_S64, TS_PRED,     TS_C64};
static const ts_elem_t quick_types[] = {TS_F32, TS_BF16, TS_S4, TS_C64};

typedef enum { C_FLOAT, C_SINT, C_UINT, C_PRED, C_COMPLEX } cls_t;

static cls_t cls_of(ts_elem_t t) {
  if (t == TS_PRED) return C_PRED;
  if (ts_elem_is_complex(t)) return C_COMPLEX;
  if (ts_elem_is_unsigned_int(t)) return C_UINT;
  if (ts_elem_is_signed_int(t)) return C_SINT;
  return C_FLOAT;
}

/* Element k contributed by world rank w. */
static void value(ts_elem_t t, int w, size_t k, ts_coll_redop_t op, double *re, double *im) {
  size_t h = (size_t)w * 3 + k * 7;
  *im = 0;
  switch (cls_of(t)) {
  case C_FLOAT:
  case C_SINT:
    if (op == TS_COLL_PROD) {
      static const double f[3] = {1, 2, -1};
      *re = f[((size_t)w + k) % 3];
    } else {
      *re = (double)(h % 5) - 2;
    }
    break;
  case C_UINT: *re = op == TS_COLL_PROD ? 1 + (double)(((size_t)w + k) % 2) : (double)(((size_t)w + k * 3) % 4); break;
  case C_PRED: *re = (((size_t)w + k) % 3) == 0; break;
  case C_COMPLEX:
    if (op == TS_COLL_PROD) {
      static const double a[3][2] = {{1, 0}, {0, 1}, {-1, 0}};
      *re = a[((size_t)w + k) % 3][0];
      *im = a[((size_t)w + k) % 3][1];
    } else {
      *re = (double)(h % 5) - 2;
      *im = (double)(((size_t)w + k) % 3) - 1;
    }
    break;
  }
}

static void combine(ts_coll_redop_t op, double *re, double *im, double bre, double bim) {
  switch (op) {
  case TS_COLL_SUM: *re += bre; *im += bim; break;
  case TS_COLL_PROD: {
    double r = *re * bre - *im * bim, i = *re * bim + *im * bre;
    *re = r;
    *im = i;
    break;
  }
  case TS_COLL_MIN: *re = bre < *re ? bre : *re; break;
  case TS_COLL_MAX: *re = bre > *re ? bre : *re; break;
  default: break;
  }
}

/* Stores n values (re/im pairs) in type t at out. */
static void store(ts_elem_t t, const double *v, size_t n, void *out) {
  if (n == 0) return;
  cls_t c = cls_of(t);
  if (c == C_COMPLEX) {
    ts_elem_convert(TS_C128, v, t, out, (int64_t)n);
    return;
  }
  double *re = malloc(n * sizeof *re);
  int64_t *iv = malloc(n * sizeof *iv);
  for (size_t i = 0; i < n; i++) {
    re[i] = v[2 * i];
    iv[i] = (int64_t)v[2 * i];
  }
  if (c == C_FLOAT) ts_elem_convert(TS_F64, re, t, out, (int64_t)n);
  else ts_elem_convert(TS_S64, iv, t, out, (int64_t)n);
  free(re);
  free(iv);
}

/* Fills v (2*n doubles) with rank w's elements [k0, k0+n). */
static void gen(ts_elem_t t, int w, size_t k0, size_t n, ts_coll_redop_t op, double *v) {
  for (size_t i = 0; i < n; i++) value(t, w, k0 + i, op, &v[2 * i], &v[2 * i + 1]);
}

/* Expected reduction over every member of elements [k0, k0+n). */
static void gen_reduced(ts_coll_comm_t *c, ts_elem_t t, size_t k0, size_t n, ts_coll_redop_t op, double *v) {
  for (size_t i = 0; i < n; i++) {
    double re, im;
    value(t, ts_coll_comm_world_rank(c, 0), k0 + i, op, &re, &im);
    for (int p = 1; p < ts_coll_comm_size(c); p++) {
      double bre, bim;
      value(t, ts_coll_comm_world_rank(c, p), k0 + i, op, &bre, &bim);
      combine(op, &re, &im, bre, bim);
    }
    v[2 * i] = re;
    v[2 * i + 1] = im;
  }
}

/* Equal bits, or (floats) equal values: -0 == +0, since a product's zero
 * sign depends on the order of the factors. */
static bool same(ts_elem_t t, const void *a, const void *b, size_t es) {
  if (memcmp(a, b, es) == 0) return true;
  cls_t c = cls_of(t);
  if (c != C_FLOAT && c != C_COMPLEX) return false;
  double x[2] = {0, 0}, y[2] = {0, 0};
  ts_elem_t to = c == C_COMPLEX ? TS_C128 : TS_F64;
  ts_elem_convert(t, a, to, x, 1);
  ts_elem_convert(t, b, to, y, 1);
  return x[0] == y[0] && x[1] == y[1];
}

typedef struct {
  ts_coll_kind_t kind;
  ts_coll_redop_t op;
  ts_elem_t type;
  size_t count;
  const char *algo;
  bool in_place;
  const char *group;
} case_t;

/* Runs one case on c; returns the number of wrong elements (+1000000 when
 * the operation failed) on this rank. */
static void *buf_alloc(ts_coll_comm_t *c, bool shared, size_t bytes) {
  void *p = NULL;
  if (!shared) return malloc(bytes);
  return ts_coll_alloc(c, bytes, &p) == TS_OK ? p : NULL;
}

static void buf_free(ts_coll_comm_t *c, bool shared, void *p) {
  if (shared) ts_coll_free(c, p);
  else free(p);
}

static int64_t run_case(ts_coll_comm_t *c, const case_t *k, int alloc, const char **algo_used) {
  int n = ts_coll_comm_size(c), r = ts_coll_comm_rank(c), w = ts_coll_comm_world_rank(c, r);
  bool shared = alloc == 1 || (alloc == 2 && w % 2 == 1);
  size_t es = (size_t)ts_elem_storage_bytes(k->type), cnt = k->count;
  size_t nin = cnt, nout = cnt;
  switch (k->kind) {
  case TS_COLL_ALL_GATHER: nout = cnt * (size_t)n; break;
  case TS_COLL_REDUCE_SCATTER: nin = cnt * (size_t)n; break;
  case TS_COLL_ALL_TO_ALL: nin = nout = cnt * (size_t)n; break;
  default: break;
  }
  size_t vmax = (nin > nout ? nin : nout) + 1;
  double *v = malloc(2 * vmax * sizeof *v);
  char *send = buf_alloc(c, shared, nin * es + 1), *recv = buf_alloc(c, shared, nout * es + CANARY);
  char *want = malloc(nout * es + 1);
  memset(recv, 0xA5, nout * es + CANARY);
  /* inputs */
  if (k->kind == TS_COLL_ALL_TO_ALL) {
    for (int j = 0; j < n; j++) {
      gen(k->type, w, (size_t)j * cnt, cnt, k->op, v);
      store(k->type, v, cnt, send + (size_t)j * cnt * es);
    }
  } else {
    gen(k->type, w, 0, nin, k->op, v);
    store(k->type, v, nin, send);
  }
  /* expected */
  int from = -1;
  memset(want, 0, nout * es + 1);
  switch (k->kind) {
  case TS_COLL_ALL_REDUCE:
    gen_reduced(c, k->type, 0, cnt, k->op, v);
    store(k->type, v, cnt, want);
    break;
  case TS_COLL_REDUCE_SCATTER:
    gen_reduced(c, k->type, (size_t)r * cnt, cnt, k->op, v);
    store(k->type, v, cnt, want);
    break;
  case TS_COLL_ALL_GATHER:
    for (int p = 0; p < n; p++) {
      gen(k->type, ts_coll_comm_world_rank(c, p), 0, cnt, k->op, v);
      store(k->type, v, cnt, want + (size_t)p * cnt * es);
    }
    break;
  case TS_COLL_ALL_TO_ALL:
    for (int p = 0; p < n; p++) {
      gen(k->type, ts_coll_comm_world_rank(c, p), (size_t)r * cnt, cnt, k->op, v);
      store(k->type, v, cnt, want + (size_t)p * cnt * es);
    }
    break;
  case TS_COLL_COLLECTIVE_PERMUTE:
    from = r - 1; /* pairs {i, i+1}: rank 0 is no target and gets zeros */
    if (from >= 0) {
      gen(k->type, ts_coll_comm_world_rank(c, from), 0, cnt, k->op, v);
      store(k->type, v, cnt, want);
    }
    break;
  case TS_COLL_BROADCAST:
    gen(k->type, ts_coll_comm_world_rank(c, n - 1), 0, cnt, k->op, v);
    store(k->type, v, cnt, want);
    break;
  case TS_COLL_SEND:
    if (r % 2 == 1) {
      gen(k->type, ts_coll_comm_world_rank(c, r - 1), 0, cnt, k->op, v);
      store(k->type, v, cnt, want);
    } else if (r + 1 < n) {
      memcpy(want, recv, nout * es); /* the sender's recv is untouched */
    }
    break;
  default: break;
  }
  if (k->kind == TS_COLL_SEND && r % 2 == 0 && r + 1 >= n) memcpy(want, recv, nout * es);
  ts_coll_comm_force_algorithm(c, k->algo);
  ts_coll_req_t *req = NULL;
  ts_status_t st = TS_OK;
  void *sbuf = send;
  if (k->in_place) {
    memcpy(recv, send, nin * es);
    sbuf = recv;
  }
  int64_t (*pairs)[2] = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *pairs);
  for (int i = 0; i + 1 < n; i++) {
    pairs[i][0] = i;
    pairs[i][1] = i + 1;
  }
  switch (k->kind) {
  case TS_COLL_ALL_REDUCE: st = ts_coll_allreduce_post(c, sbuf, recv, cnt, k->type, k->op, &req); break;
  case TS_COLL_ALL_GATHER: st = ts_coll_allgather_post(c, send, recv, cnt, k->type, &req); break;
  case TS_COLL_REDUCE_SCATTER: st = ts_coll_reduce_scatter_post(c, send, recv, cnt, k->type, k->op, &req); break;
  case TS_COLL_ALL_TO_ALL: st = ts_coll_alltoall_post(c, send, recv, cnt, k->type, &req); break;
  case TS_COLL_COLLECTIVE_PERMUTE:
    st = ts_coll_permute_post(c, send, recv, cnt, k->type, (const int64_t(*)[2])pairs, n - 1, &req);
    break;
  case TS_COLL_BROADCAST: st = ts_coll_broadcast_post(c, send, recv, cnt, k->type, n - 1, &req); break;
  case TS_COLL_SEND:
    if (r % 2 == 1) st = ts_coll_recv_post(c, recv, cnt, k->type, r - 1, &req);
    else if (r + 1 < n) st = ts_coll_send_post(c, send, cnt, k->type, r + 1, &req);
    break;
  case TS_COLL_BARRIER: st = ts_coll_barrier_post(c, &req); break;
  default: st = TS_ERR_INTERNAL;
  }
  if (st == TS_OK && req) {
    /* exercise test() before wait() */
    for (int i = 0; i < 3 && ts_coll_test(req) == TS_INPROGRESS; i++) {
    }
    st = ts_coll_wait(req, 60);
  }
  ts_coll_comm_force_algorithm(c, NULL);
  ts_coll_record_t rec;
  *algo_used = ts_coll_records(c, &rec, 1) == 1 ? rec.algorithm : "?";
  int64_t wrong = 0;
  if (st != TS_OK) {
    fprintf(stderr, "rank %d: %s failed: %s\n", w, ts_coll_kind_name(k->kind), ts_status_string(st));
    wrong = 1000000;
  } else if (k->kind != TS_COLL_BARRIER) {
    for (size_t i = 0; i < nout; i++) wrong += !same(k->type, recv + i * es, want + i * es, es);
    for (size_t i = 0; i < CANARY; i++) wrong += (unsigned char)recv[nout * es + i] != 0xA5;
  }
  free(pairs);
  free(v);
  buf_free(c, shared, send);
  buf_free(c, shared, recv);
  free(want);
  return wrong;
}

#define NALGOS 4
typedef struct {
  ts_coll_kind_t kind;
  const char *algos[NALGOS];
} kind_algos_t;

/* NULL: the table's choice; the others forced by name. "hierarchical" runs
 * only with a slice layout (o->slices), on the whole world. */
static const kind_algos_t kinds[] = {
    {TS_COLL_ALL_REDUCE, {NULL, "ring", "recursive-doubling", "hierarchical"}},
    {TS_COLL_ALL_GATHER, {NULL, "ring", "recursive-doubling", "hierarchical"}},
    {TS_COLL_REDUCE_SCATTER, {NULL, "ring", "hierarchical", NULL}},
    {TS_COLL_ALL_TO_ALL, {NULL, "pairwise", "bruck", NULL}},
    {TS_COLL_COLLECTIVE_PERMUTE, {NULL, "p2p", NULL, NULL}},
    {TS_COLL_BROADCAST, {NULL, "binomial", NULL, NULL}},
    {TS_COLL_SEND, {NULL, NULL, NULL, NULL}},
    {TS_COLL_BARRIER, {NULL, "dissemination", NULL, NULL}},
};

static bool has_hier(ts_coll_kind_t k) {
  return k == TS_COLL_ALL_REDUCE || k == TS_COLL_ALL_GATHER || k == TS_COLL_REDUCE_SCATTER;
}

int coll_matrix_run(ts_coll_comm_t *world, const coll_matrix_opts_t *o) {
  int n = ts_coll_comm_size(world), me = ts_coll_comm_rank(world);
  int failed = 0, cases = 0;
  bool sliced = o->slices > 1;
  if (sliced) {
    ts_status_t st = ts_coll_comm_set_slices(world, o->slices);
    if (st || ts_coll_comm_slices(world) != o->slices) {
      fprintf(stderr, "set_slices(%d): %s\n", o->slices, ts_status_string(st));
      return 1;
    }
  }
  /* group shapes */
  ts_coll_comm_t *groups[3] = {world, NULL, NULL};
  const char *gname[3] = {"all", "pairs", "strided"};
  int ngroups = 1;
  {
    int np = (n + 1) / 2;
    ts_i64_list_t *l = calloc((size_t)np, sizeof *l);
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = i;
    for (int g = 0; g < np; g++) {
      l[g].v = ids + 2 * g;
      l[g].n = 2 * g + 1 < n ? 2 : 1;
    }
    ts_status_t st = ts_coll_comm_split(world, l, np, TS_COLL_FLATTENED_ID, 1, n, &groups[ngroups]);
    if (st) {
      fprintf(stderr, "split pairs: %s\n", ts_status_string(st));
      failed++;
    } else {
      ngroups++;
    }
    free(l);
    free(ids);
  }
  if (n >= 4 && n % 2 == 0) {
    /* [2, n/2] <= [n/2, 2] T(1,0): {0,2,4,...}, {1,3,5,...} */
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    int64_t reshape[2] = {n / 2, 2}, perm[2] = {1, 0};
    ts_coll_iota_groups(2, n / 2, reshape, 2, perm, 2, ids);
    ts_i64_list_t l[2] = {{.v = ids, .n = n / 2}, {.v = ids + n / 2, .n = n / 2}};
    ts_status_t st = ts_coll_comm_split(world, l, 2, TS_COLL_FLATTENED_ID, 1, n, &groups[ngroups]);
    if (st) {
      fprintf(stderr, "split strided: %s\n", ts_status_string(st));
      failed++;
    } else {
      gname[ngroups] = "strided";
      ngroups++;
    }
    free(ids);
  }
  const ts_elem_t *types = o->quick ? quick_types : all_types;
  size_t ntypes = o->quick ? sizeof quick_types / sizeof quick_types[0] : sizeof all_types / sizeof all_types[0];
  static const size_t counts_full[] = {1, 37, 3000, 40000, 300000};
  static const size_t counts_quick[] = {1, 37, 3000, 300000};
  const size_t *counts = o->quick ? counts_quick : counts_full;
  size_t ncounts = o->quick ? 3 : 4;
  if (o->alloc) ncounts++; /* above the eager size: the mapped paths */
  for (int g = 0; g < ngroups; g++) {
    ts_coll_comm_t *c = groups[g];
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
      const kind_algos_t *ka = &kinds[ki];
      for (int ai = 0; ai < NALGOS; ai++) {
        if (ai > 0 && !ka->algos[ai]) continue;
        bool hier = ka->algos[ai] && strcmp(ka->algos[ai], "hierarchical") == 0;
        if (hier && (!sliced || g != 0)) continue;
        /* on the sliced world the table's choice is hierarchical too */
        bool want_hier = sliced && g == 0 && has_hier(ka->kind) && (hier || !ka->algos[ai]);
        for (size_t ti = 0; ti < ntypes; ti++) {
          ts_elem_t t = types[ti];
          bool reduces = ka->kind == TS_COLL_ALL_REDUCE || ka->kind == TS_COLL_REDUCE_SCATTER;
          for (int opi = 0; opi < (reduces ? 4 : 1); opi++) {
            ts_coll_redop_t op = (ts_coll_redop_t)opi;
            if (reduces && ts_elem_is_complex(t) && op > TS_COLL_PROD) continue;
            if (ka->kind == TS_COLL_REDUCE_SCATTER && op == TS_COLL_PROD) continue;
            for (size_t ci = 0; ci < ncounts; ci++) {
              if (ka->kind == TS_COLL_BARRIER && (ci > 0 || ti > 0)) continue;
              /* the big count once per kind/algo, in two types */
              if (counts[ci] > 10000 && ti > 1) continue;
              for (int ip = 0; ip < (ka->kind == TS_COLL_ALL_REDUCE && ci == 1 ? 2 : 1); ip++) {
                case_t k = {ka->kind, op, t, counts[ci], ka->algos[ai], ip == 1, gname[g]};
                const char *used = "?";
                int64_t wrong = run_case(c, &k, o->alloc, &used);
                if (want_hier && strcmp(used, "hierarchical") != 0) {
                  fprintf(stderr, "rank %d: %s ran %s, not hierarchical\n", me, ts_coll_kind_name(k.kind), used);
                  wrong++;
                }
                int64_t total = o->sum(wrong, o->sum_ctx);
                cases++;
                if (total) failed++;
                if (me == 0 && (o->report || total)) {
                  FILE *f = o->report ? o->report : stderr;
                  fprintf(f, "case %-18s %-4s %-9s group=%-7s n=%d count=%-6zu algo=%-18s%s %s", ts_coll_kind_name(k.kind),
                          reduces ? ts_coll_redop_name(op) : "none", ts_elem_name(t), gname[g], ts_coll_comm_size(c),
                          k.count, used, k.in_place ? " in-place" : "", total ? "FAIL" : "ok");
                  if (total) fprintf(f, " (#wrong %lld)", (long long)total);
                  fputc('\n', f);
                }
              }
            }
          }
        }
      }
    }
  }
  for (int g = 1; g < ngroups; g++) ts_coll_comm_destroy(groups[g]);
  if (sliced && ts_coll_comm_set_slices(world, 1) != TS_OK) failed++;
  if (me == 0) fprintf(o->report ? o->report : stderr, "# %d cases, %d failed\n", cases, failed);
  return failed;
}
