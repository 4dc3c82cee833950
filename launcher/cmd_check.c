/* tessera check: partition a module, run the per-device program on N
 * simulated devices and compare its outputs with the reference
 * interpreter's run of the unpartitioned module on the same inputs. */
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_launcher.h"
#include "ts_partitioner.h"
#include "ts_sharding.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RANK 64

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera check --num-partitions N [PARTITIONER FLAGS] [--random-inputs SEED]\n"
          "                     [--max-memory BYTES] MODULE.hlo\n"
          "\n"
          "Partitions an HLO module for N devices, verifies the per-device program,\n"
          "runs it on N simulated devices in this process (real collective semantics)\n"
          "and compares every output with the reference interpreter's run of the\n"
          "unpartitioned module on the same seeded random inputs. Device d's\n"
          "parameters are its shards of the full inputs under the entry parameters'\n"
          "shardings (after propagation); outputs are assembled under the root's.\n"
          "\n"
          "  --num-partitions N    devices (required unless the module's header has\n"
          "                        num_partitions > 1)\n"
          "  --random-inputs SEED  seed of the random inputs (default 0)\n"
          "  --max-memory BYTES    do not run when the estimated memory of a run exceeds\n"
          "                        BYTES (suffixes K, M, G, T: powers of 1024); the\n"
          "                        default is half of this machine's memory\n"
          "  -h, --help            this help\n"
          "partitioner flags (named after XLA's SpmdPartitionerOptions):\n"
          "%s"
          "\n"
          "Tolerances: floats match when |got - want| <= rtol * max(|want|, F) where\n"
          "F = max(S, 1) / 16 and S is the largest |want| of that output (an absolute\n"
          "floor for elements near zero, where reduction order dominates); rtol is\n"
          "1e-5 for f32, f64 and complex, 4 ulps of the type for narrower floats\n"
          "(bf16 2^-5, f16 2^-8, f8e4m3* 2^-1, f8e5m2*/f6/f4 1). Integers and pred\n"
          "match exactly. Copies of replicated data on every device are checked too.\n"
          "\n"
          "Collectives are counted statically over the partitioned module: every\n"
          "instruction once, those inside while bodies and called computations once\n"
          "(not per iteration). Bytes per device: for each collective the larger of\n"
          "its operands' and its result's bytes on one device.\n"
          "\n"
          "Memory estimate: for each run, its entry parameters' bytes plus the sum of\n"
          "every instruction's result bytes (every computation once; tuples and\n"
          "get-tuple-element are references) -- an upper bound, since the interpreter\n"
          "drops values at their last use; the partitioned run counts N devices.\n"
          "\n"
          "Exit codes: 0 outputs match, 1 mismatch (or the partitioned program fails\n"
          "to verify or run), 2 bad input or usage, 3 too large to run here (after\n"
          "partitioning and verifying) or not supported by the partitioner yet.\n",
          ts_partition_flags_help);
}

static bool parse_seed(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') {
    fprintf(stderr, "tessera check: error: --random-inputs wants a non-negative integer seed, got '%s'\n", s);
    return false;
  }
  *out = v;
  return true;
}

/* BYTES with an optional K/M/G/T suffix (powers of 1024). */
static bool parse_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  uint64_t mul = 1;
  if (!errno && end != s && s[0] != '-' && end[0] && !end[1]) {
    switch (end[0]) {
    case 'k': case 'K': mul = UINT64_C(1) << 10; end++; break;
    case 'm': case 'M': mul = UINT64_C(1) << 20; end++; break;
    case 'g': case 'G': mul = UINT64_C(1) << 30; end++; break;
    case 't': case 'T': mul = UINT64_C(1) << 40; end++; break;
    default: break;
    }
  }
  if (errno || end == s || *end || s[0] == '-' || v == 0 || v > UINT64_MAX / mul) {
    fprintf(stderr, "tessera check: error: --max-memory wants a positive byte count (suffixes K, M, G, T), got '%s'\n",
            s);
    return false;
  }
  *out = v * mul;
  return true;
}

static uint64_t default_max_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return UINT64_C(8) << 30;
  return (uint64_t)pages * (uint64_t)page / 2;
}

static void print_bytes(FILE *f, uint64_t b) {
  if (b >= (UINT64_C(1) << 30)) fprintf(f, "%.2f GiB", (double)b / (double)(UINT64_C(1) << 30));
  else if (b >= (UINT64_C(1) << 20)) fprintf(f, "%.2f MiB", (double)b / (double)(UINT64_C(1) << 20));
  else if (b >= 1024) fprintf(f, "%.2f KiB", (double)b / 1024.0);
  else fprintf(f, "%llu B", (unsigned long long)b);
}

/* ---- static counts ------------------------------------------------------ */

/* Bytes of a shape as the HLO types say (sub-byte types packed). */
static uint64_t shape_bytes(const ts_shape_t *s) {
  if (s->elem == TS_TUPLE) {
    uint64_t b = 0;
    for (int i = 0; i < s->ntuple; i++) b += shape_bytes(s->tuple[i]);
    return b;
  }
  if (!ts_elem_is_array(s->elem)) return 0;
  return ((uint64_t)ts_shape_elements(s) * (uint64_t)ts_elem_bits(s->elem) + 7) / 8;
}

/* Bytes the interpreter holds for a value of the shape (one storage unit
 * per element). */
static uint64_t storage_bytes(const ts_shape_t *s) {
  if (s->elem == TS_TUPLE) {
    uint64_t b = 0;
    for (int i = 0; i < s->ntuple; i++) b += storage_bytes(s->tuple[i]);
    return b;
  }
  if (!ts_elem_is_array(s->elem)) return 0;
  return (uint64_t)ts_shape_elements(s) * (uint64_t)ts_elem_storage_bytes(s->elem);
}

/* The run's memory bound (see usage): entry parameters plus every result. */
static uint64_t memory_bound(const ts_hlo_module_t *m) {
  uint64_t b = 0;
  for (int p = 0; p < m->entry->nparams; p++) b += storage_bytes(m->entry->params[p]->shape);
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_comp_t *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const ts_hlo_instr_t *i = comp->instrs[k];
      if (i->op == TS_OP_PARAMETER || i->op == TS_OP_TUPLE || i->op == TS_OP_GET_TUPLE_ELEMENT) continue;
      b += storage_bytes(i->shape);
    }
  }
  return b;
}

static const char *const coll_kinds[] = {
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
    "collective-broadcast", "ragged-all-to-all", "collective-reduce",
};
enum { NKINDS = sizeof coll_kinds / sizeof coll_kinds[0] };

static int coll_kind_of(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ALL_REDUCE: case TS_OP_ALL_REDUCE_DONE: return 0;
  case TS_OP_ALL_GATHER: case TS_OP_ALL_GATHER_DONE: return 1;
  case TS_OP_REDUCE_SCATTER: return 2;
  case TS_OP_ALL_TO_ALL: return 3;
  case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_PERMUTE_DONE: return 4;
  case TS_OP_COLLECTIVE_BROADCAST: return 5;
  case TS_OP_RAGGED_ALL_TO_ALL: return 6;
  case TS_OP_COLLECTIVE_REDUCE: return 7;
  default: return -1;
  }
}

typedef struct {
  int64_t count[NKINDS];
  uint64_t bytes[NKINDS];
} coll_stats_t;

/* Counts each collective once, at its synchronous form or at its -done
 * (whose operands are the -start's). */
static void count_collectives(const ts_hlo_module_t *m, coll_stats_t *cs) {
  memset(cs, 0, sizeof *cs);
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_comp_t *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const ts_hlo_instr_t *i = comp->instrs[k], *start = i;
      int kind;
      if (i->op == TS_OP_ASYNC_DONE) {
        kind = coll_kind_of(i->async_wrapped);
        while (start->nops > 0 && (start->op == TS_OP_ASYNC_DONE || start->op == TS_OP_ASYNC_UPDATE))
          start = start->ops[0];
      } else {
        kind = coll_kind_of(i->op);
        if (kind >= 0 && (i->op == TS_OP_ALL_REDUCE_DONE || i->op == TS_OP_ALL_GATHER_DONE ||
                          i->op == TS_OP_COLLECTIVE_PERMUTE_DONE) && i->nops > 0)
          start = i->ops[0];
      }
      if (kind < 0) continue;
      uint64_t in = 0, out = shape_bytes(i->shape);
      for (int o = 0; o < start->nops; o++) in += shape_bytes(start->ops[o]->shape);
      cs->count[kind]++;
      cs->bytes[kind] += in > out ? in : out;
    }
  }
}

static void print_collectives(const coll_stats_t *cs) {
  int64_t n = 0;
  uint64_t b = 0;
  printf("collectives (static: each instruction once, while bodies once):\n");
  printf("  %-22s %8s %16s\n", "kind", "count", "bytes/device");
  for (int k = 0; k < NKINDS; k++) {
    if (!cs->count[k]) continue;
    printf("  %-22s %8lld %16llu\n", coll_kinds[k], (long long)cs->count[k], (unsigned long long)cs->bytes[k]);
    n += cs->count[k];
    b += cs->bytes[k];
  }
  printf("  %-22s %8lld %16llu\n", "total", (long long)n, (unsigned long long)b);
}

/* ---- comparison --------------------------------------------------------- */

/* Relative tolerance per element type (see usage). */
static double rtol_of(ts_elem_t e) {
  switch (e) {
  case TS_F16: return 1.0 / 256;
  case TS_BF16: return 1.0 / 32;
  case TS_F8E4M3: case TS_F8E4M3FN: case TS_F8E4M3B11FNUZ: case TS_F8E4M3FNUZ: case TS_F8E3M4: return 0.5;
  case TS_F8E5M2: case TS_F8E5M2FNUZ: case TS_F8E8M0FNU: case TS_F4E2M1FN: case TS_F6E2M3FN: case TS_F6E3M2FN:
    return 1.0;
  default: return 1e-5;
  }
}

typedef struct {
  double worst;      /* the largest error measure (|g-w| / max(|w|, F); ints: 0 or inf) */
  int64_t nbad;      /* elements over the tolerance */
  int64_t at[MAX_RANK]; /* full index of the worst element */
  int64_t got_flat, want_flat;
  bool any;
} cmp_t;

static bool is_exact(ts_elem_t e) { return !ts_elem_is_float(e) && !ts_elem_is_complex(e); }

/* The largest finite magnitude of an array. */
static double max_abs(const ts_array_t *a) {
  double s = 0;
  int64_t n = ts_array_count(a);
  for (int64_t k = 0; k < n; k++) {
    double re, im;
    ts_load_c(a->elem, a->data, k, &re, &im);
    double v = hypot(re, im);
    if (isfinite(v) && v > s) s = v;
  }
  return s;
}

static double elem_error(ts_elem_t e, const void *g, int64_t gi, const void *w, int64_t wi, double floor_) {
  if (is_exact(e)) return ts_load_i(e, g, gi) == ts_load_i(e, w, wi) ? 0 : INFINITY;
  double gr, gim, wr, wim;
  ts_load_c(e, g, gi, &gr, &gim);
  ts_load_c(e, w, wi, &wr, &wim);
  bool gn = isnan(gr) || isnan(gim), wn = isnan(wr) || isnan(wim);
  if (gn || wn) return gn && wn ? 0 : INFINITY;
  if (!isfinite(gr) || !isfinite(gim) || !isfinite(wr) || !isfinite(wim))
    return gr == wr && gim == wim ? 0 : INFINITY;
  double d = hypot(gr - wr, gim - wim), m = hypot(wr, wim);
  return d / (m > floor_ ? m : floor_);
}

/* Compares the box ext[] of `got` (from its origin) with `want` at off[]. */
static void compare_box(const ts_array_t *want, const int64_t *off, const ts_array_t *got, const int64_t *ext,
                        double floor_, double rtol, cmp_t *r) {
  int rank = want->rank;
  int64_t ws[MAX_RANK], gs[MAX_RANK], idx[MAX_RANK] = {0};
  for (int k = 0; k < rank; k++)
    if (ext[k] <= 0) return;
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) ws[k] = s, s *= want->dims[k];
  s = 1;
  for (int k = rank - 1; k >= 0; k--) gs[k] = s, s *= got->dims[k];
  for (;;) {
    int64_t wi = 0, gi = 0;
    for (int k = 0; k < rank; k++) {
      wi += (off[k] + idx[k]) * ws[k];
      gi += idx[k] * gs[k];
    }
    double e = elem_error(want->elem, got->data, gi, want->data, wi, floor_);
    if (e > rtol) r->nbad++;
    if (!r->any || e > r->worst) {
      r->any = true;
      r->worst = e;
      r->got_flat = gi;
      r->want_flat = wi;
      for (int k = 0; k < rank; k++) r->at[k] = off[k] + idx[k];
    }
    int k = rank - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

static void print_elem(ts_elem_t e, const void *p, int64_t i) {
  if (is_exact(e)) {
    int64_t v = ts_load_i(e, p, i);
    if (ts_elem_is_unsigned_int(e)) printf("%llu", (unsigned long long)v);
    else printf("%lld", (long long)v);
  } else if (ts_elem_is_complex(e)) {
    double re, im;
    ts_load_c(e, p, i, &re, &im);
    printf("(%.9g, %.9g)", re, im);
  } else {
    printf("%.9g", ts_load_f(e, p, i));
  }
}

static void print_index(int rank, const int64_t *at) {
  printf("[");
  for (int k = 0; k < rank; k++) printf(k ? ",%lld" : "%lld", (long long)at[k]);
  printf("]");
}

/* "out<k>" and, for tuple results, its tuple index "{i,j}". */
static int leaf_name(const ts_shape_t *s, int want, int *seen, char *path, size_t cap, size_t len) {
  if (s->elem != TS_TUPLE) return (*seen)++ == want;
  for (int i = 0; i < s->ntuple; i++) {
    int w = snprintf(path + len, cap - len, len > 1 ? ",%d" : "%d", i);
    if (w < 0 || (size_t)w >= cap - len) return 0;
    if (leaf_name(s->tuple[i], want, seen, path, cap, len + (size_t)w)) return 1;
    path[len] = 0;
  }
  return 0;
}

static void print_leaf_title(const ts_shape_t *root, int k, const ts_array_t *a) {
  char path[256] = "{";
  int seen = 0;
  printf("out%d %s[", k, ts_elem_name(a->elem));
  for (int d = 0; d < a->rank; d++) printf(d ? ",%lld" : "%lld", (long long)a->dims[d]);
  printf("]");
  if (root->elem == TS_TUPLE && leaf_name(root, k, &seen, path, sizeof path - 1, 1)) printf(" %s}", path);
}

/* Whether device `d` must hold a copy of its part of a leaf with sharding
 * sv (maximal: only its device; manual: device-specific data). */
static bool holds_copy(const ts_sharding_value_t *sv, int64_t d) {
  switch (sv->kind) {
  case TS_SHARD_REPLICATED: case TS_SHARD_UNKNOWN: return true;
  case TS_SHARD_MAXIMAL: return d == sv->device;
  case TS_SHARD_TILED:
    for (int k = 0; k < sv->nsubgroups; k++)
      if (sv->subgroups[k] != TS_SUBGROUP_REPLICATED) return false;
    for (int64_t t = 0; t < sv->ntiles; t++)
      if (sv->devices[t] == d) return true;
    return false;
  default: return false;
  }
}

/* Compares every leaf: the assembled output, then each device's copy.
 * Returns the number of mismatching leaves. */
static int compare_outputs(const ts_hlo_module_t *m, ts_value_t *want, ts_value_t *got,
                           const ts_sharding_value_t *root_sv, ts_value_t *const *dev_outs, int ndev,
                           ts_status_t *st) {
  int n = ts_value_leaves(want, NULL, 0), bad = 0;
  ts_array_t *w = ts_calloc((size_t)n + 1, sizeof *w), *g = ts_calloc((size_t)n + 1, sizeof *g),
             *dv = ts_calloc((size_t)n + 1, sizeof *dv);
  *st = TS_OK;
  if (!w || !g || !dv) {
    *st = TS_ERR_NOMEM;
    goto done;
  }
  ts_value_leaves(want, w, n);
  ts_value_leaves(got, g, n);
  for (int k = 0; k < n; k++) {
    if (!ts_elem_is_array(w[k].elem)) continue;
    const ts_sharding_value_t *sv = root_sv->kind == TS_SHARD_TUPLE ? root_sv->tuple[k] : root_sv;
    double rtol = is_exact(w[k].elem) ? 0 : rtol_of(w[k].elem);
    double s = is_exact(w[k].elem) ? 0 : max_abs(&w[k]);
    double floor_ = (s > 1 ? s : 1) / 16;
    int64_t zero[MAX_RANK] = {0};
    cmp_t r = {0};
    compare_box(&w[k], zero, &g[k], w[k].dims, floor_, rtol, &r);
    print_leaf_title(m->entry->root->shape, k, &w[k]);
    if (r.nbad) {
      bad++;
      printf(": MISMATCH: %lld of %lld elements differ", (long long)r.nbad, (long long)ts_array_count(&w[k]));
      if (!is_exact(w[k].elem)) printf(", max relative error %.3g > %.3g", r.worst, rtol);
      printf("; worst at ");
      print_index(w[k].rank, r.at);
      printf(": got ");
      print_elem(g[k].elem, g[k].data, r.got_flat);
      printf(", want ");
      print_elem(w[k].elem, w[k].data, r.want_flat);
      printf("\n");
      continue;
    }
    if (is_exact(w[k].elem)) printf(": match (exact)");
    else printf(": match, max relative error %.3g (tolerance %.3g)", r.any ? r.worst : 0.0, rtol);
    /* The copies the assembly did not read must agree too. */
    cmp_t worst = {0};
    int64_t worst_dev = -1;
    for (int d = 0; d < ndev; d++) {
      if (!holds_copy(sv, d)) continue;
      int64_t off[MAX_RANK], lim[MAX_RANK], ext[MAX_RANK];
      ts_shape_t full = {.elem = w[k].elem, .rank = w[k].rank, .dims = (int64_t *)w[k].dims};
      if (ts_value_leaves(dev_outs[d], dv, n) != n || dv[k].rank != w[k].rank ||
          ts_sharding_shard(sv, &full, d, off, lim) != TS_OK) {
        *st = TS_ERR_INTERNAL;
        goto done;
      }
      for (int j = 0; j < w[k].rank; j++) ext[j] = lim[j] - off[j];
      cmp_t r2 = {0};
      compare_box(&w[k], off, &dv[k], ext, floor_, rtol, &r2);
      if (r2.nbad && (worst_dev < 0 || r2.worst > worst.worst)) {
        worst = r2;
        worst_dev = d;
      }
    }
    if (worst_dev >= 0) {
      bad++;
      ts_value_leaves(dev_outs[worst_dev], dv, n);
      printf("; but MISMATCH on device %lld's copy: %lld elements differ; worst at ", (long long)worst_dev,
             (long long)worst.nbad);
      print_index(w[k].rank, worst.at);
      printf(": got ");
      print_elem(dv[k].elem, dv[k].data, worst.got_flat);
      printf(", want ");
      print_elem(w[k].elem, w[k].data, worst.want_flat);
    }
    printf("\n");
  }
done:
  ts_free(w);
  ts_free(g);
  ts_free(dv);
  return bad;
}

/* ---- the command -------------------------------------------------------- */

/* The value of an instruction's sharding on its shape; replicated when it
 * has none. */
static ts_status_t sharding_of(ts_hlo_module_t *m, const ts_hlo_instr_t *i, ts_sharding_value_t **out) {
  if (!i->sharding) return ts_sharding_simple(m->arena, TS_SHARD_REPLICATED, out);
  return ts_sharding_from_syntax(m->arena, i->sharding, i->shape, out);
}

typedef struct {
  const char *path;
  int64_t partitions;
  uint64_t seed, max_memory;
  ts_partition_opts_t popts;
} check_args_t;

/* Partition, verify, estimate, run both and compare. Messages for the
 * user's input go to diag; the rest is printed here. */
static ts_status_t check(const check_args_t *a, ts_diag_t *diag) {
  ts_hlo_module_t *m = NULL, *pm = NULL;
  ts_interp_t *ref_it = NULL, *part_it = NULL;
  ts_value_t **args = NULL, **dargs = NULL, **douts = NULL, *want = NULL, *got = NULL;
  char *text = NULL;
  int np = 0, ndev = 0;
  ts_status_t st;
  ts_hlo_verify_opts_t vopts = {.num_partitions = a->partitions};

  TS_CHECK_GOTO(ts_cli_read_module(a->path, &vopts, &text, &m, diag), st, done);
  int64_t n = a->partitions ? a->partitions : m->num_partitions;
  if (n <= 1) {
    ts_diag_plain(diag, "say how many devices with --num-partitions N (the module's header gives none)");
    st = TS_ERR_INVALID_USAGE;
    goto done;
  }
  if (n > 1024) {
    ts_diag_plain(diag, "--num-partitions %lld: one process simulates at most 1024 devices", (long long)n);
    st = TS_ERR_INVALID_USAGE;
    goto done;
  }
  ndev = (int)n;
  vopts.num_partitions = n;
  np = m->entry->nparams;
  args = ts_calloc((size_t)np + 1, sizeof *args);
  dargs = ts_calloc((size_t)np * (size_t)ndev + 1, sizeof *dargs);
  douts = ts_calloc((size_t)ndev + 1, sizeof *douts);
  if (!args || !dargs || !douts) {
    st = TS_ERR_NOMEM;
    goto done;
  }

  /* The reference first, on the module as written (the partitioner then
   * writes propagated shardings into it). */
  uint64_t ref_bytes = memory_bound(m);
  bool fits = ref_bytes <= a->max_memory;
  if (fits) {
    TS_CHECK_GOTO(ts_interp_random_args(m, a->seed, args), st, done);
    ts_interp_opts_t ro = {.ndevices = 0, .num_partitions = n};
    TS_CHECK_GOTO(ts_interp_create(m, &ro, &ref_it, diag), st, done);
    TS_CHECK_GOTO(ts_interp_run(ref_it, args, &want, diag), st, done);
    ts_interp_destroy(ref_it);
    ref_it = NULL;
  }

  ts_partition_opts_t popts = a->popts;
  popts.num_partitions = n;
  TS_CHECK_GOTO(ts_partition(m, &popts, &pm, diag), st, done);
  {
    ts_hlo_verify_opts_t pv = {.num_partitions = n};
    ts_diag_t vd = {0};
    if ((st = ts_hlo_verify(pm, &pv, &vd)) != TS_OK) {
      ts_diag_plain(diag, "the partitioned module does not verify: %s", vd.text ? vd.text : ts_status_string(st));
      ts_diag_free(&vd);
      st = TS_ERR_CHECK_FAILED;
      goto done;
    }
  }
  int ninstr = 0;
  for (int c = 0; c < pm->ncomps; c++) ninstr += pm->comps[c]->ninstrs;
  printf("%s: partitioned for %d devices: %d instructions in %d computations, verified\n", a->path, ndev, ninstr,
         pm->ncomps);
  coll_stats_t cs;
  count_collectives(pm, &cs);
  print_collectives(&cs);

  uint64_t part_bytes = (uint64_t)ndev * memory_bound(pm);
  printf("memory estimate: reference run ");
  print_bytes(stdout, ref_bytes);
  printf(", partitioned run ");
  print_bytes(stdout, part_bytes);
  printf(" (limit ");
  print_bytes(stdout, a->max_memory);
  printf(")\n");
  fflush(stdout);
  if (!fits || part_bytes > a->max_memory) {
    printf("result: not run (the estimated memory exceeds the limit)\n");
    ts_diag_plain(diag, "too large to run here: the estimated memory exceeds --max-memory");
    st = TS_ERR_UNSUPPORTED;
    goto done;
  }
  if (pm->entry->nparams != np) {
    ts_diag_plain(diag, "the partitioned module has %d parameters, the module %d", pm->entry->nparams, np);
    st = TS_ERR_CHECK_FAILED;
    goto done;
  }

  /* Device d's arguments: its shards under the parameters' shardings. */
  for (int p = 0; p < np; p++) {
    ts_sharding_value_t *sv;
    if ((st = sharding_of(m, m->entry->params[p], &sv)) != TS_OK) {
      ts_diag_plain(diag, "the sharding of parameter %d does not fit its shape", p);
      goto done;
    }
    for (int d = 0; d < ndev; d++) {
      st = ts_interp_shard_value(args[p], sv, d, pm->entry->params[p]->shape, &dargs[(size_t)d * np + p]);
      if (st != TS_OK) {
        ts_diag_plain(diag, "cannot cut parameter %d for device %d: the partitioned parameter's shape does not "
                      "hold its shard (%s)", p, d, ts_status_string(st));
        st = TS_ERR_CHECK_FAILED;
        goto done;
      }
    }
    ts_value_unref(args[p]);
    args[p] = NULL;
  }
  ts_interp_opts_t po = {.ndevices = ndev};
  {
    ts_diag_t rd = {0};
    st = ts_interp_create(pm, &po, &part_it, &rd);
    if (st == TS_OK) st = ts_interp_run(part_it, dargs, douts, &rd);
    if (st != TS_OK) {
      ts_diag_plain(diag, "the partitioned module failed to run: %s", rd.text ? rd.text : ts_status_string(st));
      ts_diag_free(&rd);
      if (st != TS_ERR_NOMEM) st = TS_ERR_CHECK_FAILED;
      goto done;
    }
  }
  for (size_t k = 0; k < (size_t)np * (size_t)ndev; k++) {
    ts_value_unref(dargs[k]);
    dargs[k] = NULL;
  }

  ts_sharding_value_t *root_sv;
  if ((st = sharding_of(m, m->entry->root, &root_sv)) != TS_OK) {
    ts_diag_plain(diag, "the sharding of the root does not fit its shape");
    goto done;
  }
  st = ts_interp_unshard_values(douts, ndev, root_sv, m->entry->root->shape, &got);
  if (st != TS_OK) {
    ts_diag_plain(diag, "cannot assemble the result from the devices' shards (%s)", ts_status_string(st));
    if (st != TS_ERR_NOMEM && st != TS_ERR_UNSUPPORTED) st = TS_ERR_CHECK_FAILED;
    goto done;
  }
  int nleaves = ts_value_leaves(want, NULL, 0);
  int bad = compare_outputs(m, want, got, root_sv, douts, ndev, &st);
  if (st != TS_OK) goto done;
  if (bad) {
    printf("result: MISMATCH in %d of %d outputs\n", bad, nleaves);
    st = TS_ERR_CHECK_FAILED;
  } else {
    printf("result: match (%d outputs, %d devices, seed %llu)\n", nleaves, ndev, (unsigned long long)a->seed);
  }

done:
  fflush(stdout);
  if (dargs)
    for (size_t k = 0; k < (size_t)np * (size_t)ndev; k++) ts_value_unref(dargs[k]);
  if (douts)
    for (int d = 0; d < ndev; d++) ts_value_unref(douts[d]);
  if (args)
    for (int p = 0; p < np; p++) ts_value_unref(args[p]);
  ts_free(args);
  ts_free(dargs);
  ts_free(douts);
  ts_value_unref(want);
  ts_value_unref(got);
  ts_interp_destroy(part_it);
  ts_interp_destroy(ref_it);
  ts_interp_release_buffers();
  ts_hlo_module_destroy(pm);
  ts_hlo_module_destroy(m);
  ts_free(text);
  return st;
}

int ts_cmd_check(int argc, char **argv) {
  static const struct option opts[] = {
      {"num-partitions", required_argument, NULL, 'p'},
      {"random-inputs", required_argument, NULL, 'r'},
      {"max-memory", required_argument, NULL, 'm'},
      {"help", no_argument, NULL, 'h'},
      TS_PARTITION_FLAG_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  check_args_t a = {0};
  ts_partition_opts_default(&a.popts);
  a.max_memory = default_max_memory();
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': if (!ts_cli_parse_count("check", "--num-partitions", optarg, &a.partitions)) return 2; break;
    case 'r': if (!parse_seed(optarg, &a.seed)) return 2; break;
    case 'm': if (!parse_bytes(optarg, &a.max_memory)) return 2; break;
    case 'h': usage(stdout); return 0;
    case ':':
      fprintf(stderr, "tessera check: error: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    case '?':
      fprintf(stderr, "tessera check: error: unknown option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 2;
    default:
      if (!ts_partition_flag_parse("check", c, optarg, &a.popts)) return 2;
      break;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera check: error: %s\n",
            optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    return 2;
  }
  a.path = argv[optind];
  ts_diag_t diag = {0};
  ts_status_t st = check(&a, &diag);
  if (st < 0 && !(st == TS_ERR_CHECK_FAILED && !diag.text)) { /* a mismatch is reported above */
    if (diag.text) {
      const char *t = diag.text;
      /* Plain diagnostics read "error: ..."; name the command on them. */
      if (strncmp(t, "error: ", 7) == 0) fprintf(stderr, "tessera check: %s", t);
      else fputs(t, stderr);
      if (t[0] && t[strlen(t) - 1] != '\n') fputc('\n', stderr);
    } else {
      fprintf(stderr, "tessera check: error: %s\n", ts_status_string(st));
    }
  }
  ts_diag_free(&diag);
  return ts_status_exit_code(st);
}
