/* The runtime against the reference interpreter: a per-device module (or a
 * sharded one, partitioned here first) runs on N devices as N threads (or
 * under mpirun, one rank each) and every output leaf of every step is
 * compared with the interpreter's lockstep run of the same module on the
 * same per-device inputs (device d: seeded random inputs, seed + d). Aliased
 * inputs are not refilled after step 1: the runtime must update them.
 *
 *   test_runtime [--partition N] [--popt KEY=VALUE]... [--devices N] [--steps K]
 *                [--slices S] [--seed S] [--xfail FILE] [--max-bytes B]
 *                [--expect-inplace K] [--expect-copy K] [--expect-reuse]
 *                [--expect-hier NAME] [--expect-flat NAME] [--fail-hook DEV:INSTR]
 *                [--expect-error TEXT] [--kernels compiled|interp] [--mpi] MODULE.hlo
 * --kernels compiled (the default, as tessera run): the per-device module is
 * fused and its fusions run as LLVM kernels (codegen/); interp: kernels/ only.
 * --expect-hier NAME: every trace event of collective NAME (at least one per
 * step) says the library ran it "hierarchical"; --expect-flat NAME: none does.
 * Exit 0 on a match, 1 on a mismatch or failed expectation, 77 skipped. */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_interp.h"
#include "ts_partitioner.h"
#include "ts_test.h"

typedef struct {
  const char *path, *xfail, *expect_error;
  int64_t partition, replicas;
  ts_partition_opts_t popts;
  int devices, steps, slices;
  uint64_t seed, max_bytes;
  int expect_inplace, expect_copy;
  bool expect_reuse, mpi;
  const char *expect_hier, *expect_flat;
  int fail_dev;
  const char *fail_instr;
  bool interp_kernels;
} args_t;

/* ---- one device's thread ---------------------------------------------------- */

typedef struct {
  const args_t *a;
  const ts_rt_program_t *p;
  ts_coll_comm_t *world;
  int dev, ndev, np;
  ts_value_t **args;        /* [step][dev][param] values for the runtime's inputs */
  void ***got;              /* [step * ndev + dev][leaf] output copies */
  ts_status_t st;
  ts_diag_t diag;
  double seconds;
  int fail_gindex;
  int hier_gindex, flat_gindex; /* -1: not checked */
  int hier_events, hier_bad, flat_events, flat_bad;
  bool inplace_ptr_ok, copy_ptr_ok;
} dev_t;

static ts_status_t hook(void *arg, int64_t step, int instr) {
  dev_t *t = arg;
  if (instr == t->fail_gindex && step == 1) return TS_ERR_INTERNAL;
  return TS_OK;
}

/* Input leaf i of device d at `step` (from the step's argument values). */
static void fill_input(dev_t *t, ts_rt_device_t *d, int step, bool only_unaliased) {
  const ts_rt_program_t *p = t->p;
  ts_value_t **args = &t->args[((size_t)step * (size_t)t->ndev + (size_t)t->dev) * (size_t)t->np];
  int i = 0;
  for (int q = 0; q < t->np; q++) {
    ts_array_t leaves[4096];
    int n = ts_value_leaves(args[q], leaves, 4096);
    for (int k = 0; k < n && k < 4096; k++, i++) {
      bool aliased = false;
      for (int o = 0; o < ts_rt_program_noutputs(p); o++) aliased |= ts_rt_program_output_alias(p, o) == i;
      if (only_unaliased && aliased) continue;
      ts_array_t *in = ts_rt_device_input(d, i);
      memcpy(in->data, leaves[k].data, ts_array_bytes(in));
    }
  }
}

static void *device_main(void *arg) {
  dev_t *t = arg;
  const args_t *a = t->a;
  ts_rt_device_t *d = NULL;
  ts_rt_device_opts_t o = {.device_id = t->dev, .world = t->world, .slices = a->slices, .trace = true};
  ts_hang_progress_t progress;
  memset(&progress, 0, sizeof progress);
  o.progress = &progress;
  if (t->fail_gindex >= 0) {
    o.hook = hook;
    o.hook_arg = t;
  }
  t->inplace_ptr_ok = t->copy_ptr_ok = true;
  double t0 = ts_coll_now();
  t->st = ts_rt_device_create(t->p, &o, &d, &t->diag);
  int nout = ts_rt_program_noutputs(t->p);
  for (int s = 0; s < a->steps && t->st == TS_OK; s++) {
    fill_input(t, d, s, s > 0);
    t->st = ts_rt_device_run(d, s + 1, &t->diag);
    if (t->st != TS_OK) break;
    if (progress.activity != TS_HANG_IDLE || progress.step != s + 1 || progress.progress == 0) {
      fprintf(stderr, "device %d: progress record not updated (activity %d step %lld progress %llu)\n", t->dev,
              (int)progress.activity, (long long)progress.step, (unsigned long long)progress.progress);
      t->st = TS_ERR_CHECK_FAILED;
      break;
    }
    void **g = t->got[(size_t)s * (size_t)t->ndev + (size_t)t->dev];
    for (int k = 0; k < nout; k++) {
      const ts_array_t *out = ts_rt_device_output(d, k);
      memcpy(g[k], out->data, ts_array_bytes(out));
    }
    if (a->expect_inplace >= 0) {
      int i = ts_rt_program_output_alias(t->p, a->expect_inplace);
      t->inplace_ptr_ok &= i >= 0 && ts_rt_device_output(d, a->expect_inplace)->data == ts_rt_device_input(d, i)->data;
    }
    size_t n;
    const ts_rt_event_t *ev = ts_rt_device_trace(d, &n);
    for (size_t e = 0; e < n; e++) {
      if (!ev[e].is_collective) continue;
      bool hier = strcmp(ev[e].algorithm, "hierarchical") == 0;
      if (ev[e].phase != 0) t->hier_bad++; /* the runtime composes no phases */
      if (ev[e].instr == t->hier_gindex) t->hier_events++, t->hier_bad += !hier;
      if (ev[e].instr == t->flat_gindex) t->flat_events++, t->flat_bad += hier;
    }
    ts_rt_device_trace_clear(d);
  }
  if (t->st != TS_OK && progress.activity != TS_HANG_FAILED && d) {
    fprintf(stderr, "device %d: failed run not marked FAILED in the progress record\n", t->dev);
  }
  t->seconds = ts_coll_now() - t0;
  ts_rt_device_destroy(d);
  return NULL;
}

/* ---- comparison -------------------------------------------------------------- */

static double tolerance(ts_elem_t e) {
  if (e == TS_F32 || e == TS_F64 || e == TS_C64 || e == TS_C128) return 1e-5;
  return 1e-2; /* narrow floats: reductions round at different points */
}

/* Number of differing elements; prints the first. */
static int64_t compare(const char *what, const ts_array_t *want, const void *got) {
  int64_t n = ts_array_count(want), bad = 0;
  ts_elem_t e = want->elem;
  bool fl = ts_elem_is_float(e) || ts_elem_is_complex(e);
  double tol = tolerance(e);
  for (int64_t k = 0; k < n; k++) {
    bool ok;
    double w = 0, g = 0;
    if (fl) {
      double wi, gi;
      ts_load_c(e, want->data, k, &w, &wi);
      ts_load_c(e, got, k, &g, &gi);
      ok = (isnan(w) && isnan(g)) || w == g ||
           fabs(w - g) <= tol * fmax(fabs(w), fabs(g)) + (e == TS_F32 || e == TS_F64 ? 1e-6 : 1e-3);
      ok = ok && ((isnan(wi) && isnan(gi)) || fabs(wi - gi) <= tol * fmax(fabs(wi), fabs(gi)) + 1e-6);
    } else {
      ok = ts_load_i(e, want->data, k) == ts_load_i(e, got, k);
      w = (double)ts_load_i(e, want->data, k);
      g = (double)ts_load_i(e, got, k);
    }
    if (!ok && bad++ == 0)
      fprintf(stderr, "%s: element %lld: runtime %.9g, interpreter %.9g\n", what, (long long)k, g, w);
  }
  return bad;
}

/* ---- driver --------------------------------------------------------------------- */

static bool listed(const char *file, const char *path) {
  FILE *f = file ? fopen(file, "r") : NULL;
  if (!f) return false;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char line[4096];
  bool hit = false;
  while (!hit && fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    size_t n = strcspn(line, " \t\r\n");
    hit = n == strlen(base) && strncmp(line, base, n) == 0;
  }
  fclose(f);
  return hit;
}

static bool popt(ts_partition_opts_t *o, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq) return false;
  size_t n = (size_t)(eq - kv);
  const char *v = eq + 1;
  bool b = !strcmp(v, "true") || !strcmp(v, "1");
  if (!strncmp(kv, "threshold_for_windowed_einsum_mib", n)) o->threshold_for_windowed_einsum_mib = atoll(v);
  else if (!strncmp(kv, "unroll_windowed_einsum", n)) o->unroll_windowed_einsum = b;
  else if (!strncmp(kv, "bidirectional_windowed_einsum", n)) o->bidirectional_windowed_einsum = b;
  else if (!strncmp(kv, "conv_halo_exchange_always_on_lhs", n)) o->conv_halo_exchange_always_on_lhs = b;
  else if (!strncmp(kv, "choose_faster_windowed_einsum_over_mem", n)) o->choose_faster_windowed_einsum_over_mem = b;
  else return false;
  return true;
}

static int parse_args(int argc, char **argv, args_t *a) {
  static const struct option opts[] = {
      {"partition", required_argument, NULL, 'P'},
      {"popt", required_argument, NULL, 'o'},
      {"devices", required_argument, NULL, 'd'},
      {"steps", required_argument, NULL, 's'},
      {"slices", required_argument, NULL, 'S'},
      {"seed", required_argument, NULL, 'r'},
      {"xfail", required_argument, NULL, 'x'},
      {"max-bytes", required_argument, NULL, 'm'},
      {"expect-inplace", required_argument, NULL, 'i'},
      {"expect-copy", required_argument, NULL, 'c'},
      {"expect-reuse", no_argument, NULL, 'u'},
      {"expect-hier", required_argument, NULL, 'h'},
      {"fail-hook", required_argument, NULL, 'f'},
      {"expect-error", required_argument, NULL, 'e'},
      {"kernels", required_argument, NULL, 'K'},
      {"mpi", no_argument, NULL, 'M'},
      {"replica-count", required_argument, NULL, 'R'},
      {"expect-flat", required_argument, NULL, 'F'},
      {NULL, 0, NULL, 0},
  };
  memset(a, 0, sizeof *a);
  ts_partition_opts_default(&a->popts);
  a->steps = 1;
  a->seed = 1;
  a->expect_inplace = a->expect_copy = -1;
  a->fail_dev = -1;
  a->max_bytes = (uint64_t)2 << 30;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'P': a->partition = atoll(optarg); break;
    case 'K': a->interp_kernels = strcmp(optarg, "interp") == 0; break;
    case 'o':
      if (!popt(&a->popts, optarg)) {
        fprintf(stderr, "unknown partitioner option %s\n", optarg);
        return 2;
      }
      break;
    case 'd': a->devices = atoi(optarg); break;
    case 's': a->steps = atoi(optarg); break;
    case 'S': a->slices = atoi(optarg); break;
    case 'r': a->seed = strtoull(optarg, NULL, 10); break;
    case 'x': a->xfail = optarg; break;
    case 'm': a->max_bytes = strtoull(optarg, NULL, 10); break;
    case 'i': a->expect_inplace = atoi(optarg); break;
    case 'c': a->expect_copy = atoi(optarg); break;
    case 'u': a->expect_reuse = true; break;
    case 'h': a->expect_hier = optarg; break;
    case 'F': a->expect_flat = optarg; break;
    case 'f': {
      char *colon = strchr(optarg, ':');
      if (!colon) return 2;
      *colon = 0;
      a->fail_dev = atoi(optarg);
      a->fail_instr = colon + 1;
      break;
    }
    case 'e': a->expect_error = optarg; break;
    case 'M': a->mpi = true; break;
    case 'R': a->replicas = atoll(optarg); break;
    default: return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: test_runtime [options] MODULE.hlo\n");
    return 2;
  }
  a->path = argv[optind];
  return 0;
}

int main(int argc, char **argv) {
  args_t a;
  ts_coll_comm_t *mpi_world = NULL;
  int mpi_rank = 0;
  for (int k = 1; k < argc; k++)
    if (!strcmp(argv[k], "--mpi")) {
      if (ts_coll_mpi_init(&argc, &argv) != TS_OK || ts_coll_comm_create_mpi(TS_COLL_BACKEND_MPI, &mpi_world) != TS_OK) {
        printf("skipped: no MPI in this build\n");
        return 77;
      }
      mpi_rank = ts_coll_comm_rank(mpi_world);
    }
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  if (a.xfail && listed(a.xfail, a.path)) {
    printf("skipped: %s is listed in %s (tessera check fails on it)\n", a.path, a.xfail);
    return 77;
  }
  FILE *probe = fopen(a.path, "r");
  if (!probe) {
    printf("skipped: %s not found\n", a.path);
    return 77;
  }
  fclose(probe);

  ts_diag_t diag = {0};
  char *text = NULL;
  size_t len = 0;
  ts_hlo_module_t *m = NULL, *pm = NULL;
  ts_rt_program_t *p = NULL;
  ts_codegen_t *cg = NULL;
  ts_interp_t *it = NULL;
  ts_value_t **args = NULL, **want = NULL;
  void ***got = NULL;
  dev_t *t = NULL;
  ts_coll_comm_t **comms = NULL;
  pthread_t *th = NULL;
  int ndev = 0, np = 0, nout = 0, steps = a.steps, first = 0, last = 0;
  if (ts_read_file(a.path, &text, &len, &diag) != TS_OK) {
    fprintf(stderr, "%s\n", diag.text);
    { rc = 1; goto out; }
  }
  ts_source_t src = {a.path, text, len};
  ts_hlo_verify_opts_t vo = {.num_partitions = a.partition, .replica_count = a.replicas};
  if (ts_hlo_parse(&src, NULL, &m, &diag) != TS_OK || ts_hlo_verify(m, &vo, &diag) != TS_OK) {
    fprintf(stderr, "%s\n", diag.text);
    { rc = 1; goto out; }
  }
  if (a.partition > 0) {
    a.popts.num_partitions = a.partition;
    ts_hlo_verify_opts_t pv = {.num_partitions = a.partition};
    if (ts_partition(m, &a.popts, &pm, &diag) != TS_OK || ts_hlo_verify(pm, &pv, &diag) != TS_OK) {
      printf("skipped: the partitioner cannot do this module: %s\n", diag.text);
      { rc = 77; goto out; }
    }
  } else {
    pm = m;
  }
  ts_rt_program_opts_t po = {.replica_count = a.replicas};
  if (!a.interp_kernels && !a.expect_error) {
    ts_hlo_verify_opts_t fv = {.num_partitions = a.partition, .replica_count = a.replicas};
    ts_diag_t cd = {0};
    if (ts_fusion_run(pm, NULL, NULL, &diag) != TS_OK || ts_hlo_verify(pm, &fv, &diag) != TS_OK) {
      fprintf(stderr, "fusion failed: %s\n", diag.text ? diag.text : "?");
      { rc = 1; goto out; }
    }
    if (ts_codegen_compile(pm, NULL, &cg, NULL, &cd) == TS_OK) {
      po.fusion_kernel = ts_codegen_kernel;
      po.fusion_state = cg;
    } else {
      fprintf(stderr, "warning: %s; the plain kernels run\n", cd.text ? cd.text : "no JIT");
    }
    ts_diag_free(&cd);
  }
  ts_status_t st = ts_rt_program_create(pm, &po, &p, &diag);
  if (a.expect_error) {
    bool ok = st != TS_OK && diag.text && strstr(diag.text, a.expect_error);
    printf("program create: %s\n", diag.text ? diag.text : "ok");
    { rc = ok ? 0 : 1; goto out; }
  }
  if (st != TS_OK) {
    fprintf(stderr, "program create failed: %s\n", diag.text);
    { rc = 1; goto out; }
  }
  ndev = a.devices > 0 ? a.devices : (int)(p->replicas * p->partitions);
  if (mpi_world) ndev = ts_coll_comm_size(mpi_world);
  ts_rt_memory_t mem;
  ts_rt_program_memory(p, &mem);
  printf("%s: %d devices, %d inputs, %d outputs; per device: peak %llu B (inputs %llu, outputs %llu, temps %llu), "
         "naive %llu B, constants %llu B\n",
         a.path, ndev, ts_rt_program_ninputs(p), ts_rt_program_noutputs(p), (unsigned long long)mem.peak,
         (unsigned long long)mem.inputs, (unsigned long long)mem.outputs, (unsigned long long)mem.temps,
         (unsigned long long)mem.naive, (unsigned long long)mem.constants);
  if (mem.naive * (uint64_t)ndev * 3 > a.max_bytes) {
    printf("skipped: too large for this test (%llu B per device)\n", (unsigned long long)mem.naive);
    { rc = 77; goto out; }
  }
  if (a.expect_reuse) EXPECT(mem.peak < mem.naive);
  if (a.expect_inplace >= 0) {
    EXPECT(p->out_mode[a.expect_inplace] == OUT_INPLACE);
    const rt_comp_t *ec = &p->comps[p->entry];
    EXPECT(ec->bufs[p->out_buf[a.expect_inplace]].kind == BUF_INPUT);
  }
  if (a.expect_copy >= 0) EXPECT(p->out_mode[a.expect_copy] == OUT_COPY);

  /* The oracle: the interpreter on every device, step by step. */
  np = pm->entry->nparams;
  nout = ts_rt_program_noutputs(p);
  args = calloc((size_t)(steps + 1) * (size_t)ndev * (size_t)np + 1, sizeof *args);
  want = calloc((size_t)steps * (size_t)ndev + 1, sizeof *want);
  ts_interp_opts_t io = {.ndevices = ndev, .replica_count = p->replicas};
  bool oracle = a.fail_dev < 0;
  if (oracle) {
    if (ts_interp_create(pm, &io, &it, &diag) != TS_OK) {
      fprintf(stderr, "interpreter: %s\n", diag.text);
      { rc = 1; goto out; }
    }
  }
  for (int d = 0; d < ndev; d++)
    if (ts_interp_random_args(pm, a.seed + (uint64_t)d, &args[(size_t)d * np]) != TS_OK) {
      fprintf(stderr, "cannot make the arguments\n");
      { rc = 1; goto out; }
    }
  for (int s = 0; s < steps && oracle; s++) {
    if (s == 0) {
      /* A loop whose condition reads per-device data must agree across the
       * interpreter's lockstep devices: then every device takes device 0's
       * inputs. */
      ts_value_t *probe_out[1024];
      ts_diag_t pd = {0};
      if (ts_interp_run(it, args, probe_out, &pd) != TS_OK && pd.text && strstr(pd.text, "devices disagree")) {
        printf("the interpreter needs equal inputs here (%s); every device takes device 0's\n", pd.text);
        for (int d = 1; d < ndev; d++)
          for (int q = 0; q < np; q++) {
            ts_value_unref(args[(size_t)d * np + q]);
            args[(size_t)d * np + q] = ts_value_ref(args[q]);
          }
      } else if (!pd.text) {
        for (int d = 0; d < ndev && d < 1024; d++) ts_value_unref(probe_out[d]);
      }
      ts_diag_free(&pd);
    }
    ts_value_t **sa = &args[(size_t)s * ndev * np], **na = &args[(size_t)(s + 1) * ndev * np];
    if (ts_interp_run(it, sa, &want[(size_t)s * ndev], &diag) != TS_OK) {
      fprintf(stderr, "interpreter run: %s\n", diag.text);
      { rc = 1; goto out; }
    }
    /* next step's arguments: aliased leaves take the outputs */
    for (int d = 0; d < ndev; d++) {
      ts_array_t outs[4096];
      ts_value_leaves(want[(size_t)s * ndev + d], outs, 4096);
      int i = 0;
      for (int q = 0; q < np; q++) {
        ts_value_t *v = ts_value_new(sa[(size_t)d * np + q]->shape);
        ts_array_t old[4096], nw[4096];
        int n = ts_value_leaves(sa[(size_t)d * np + q], old, 4096);
        ts_value_leaves(v, nw, 4096);
        for (int k = 0; k < n; k++, i++) {
          const void *from = old[k].data;
          for (int o = 0; o < nout; o++)
            if (ts_rt_program_output_alias(p, o) == i) from = outs[o].data;
          memcpy(nw[k].data, from, ts_array_bytes(&nw[k]));
        }
        na[(size_t)d * np + q] = v;
      }
    }
  }
  if (!oracle)
    for (int s = 1; s <= steps; s++)
      for (size_t k = 0; k < (size_t)ndev * np; k++) args[(size_t)s * ndev * np + k] = ts_value_ref(args[k]);

  /* The runtime. */
  got = calloc((size_t)steps * (size_t)ndev + 1, sizeof *got);
  for (int k = 0; k < steps * ndev; k++) {
    got[k] = calloc((size_t)nout + 1, sizeof **got);
    for (int o = 0; o < nout; o++) {
      const ts_shape_t *s = ts_rt_program_output_shape(p, o);
      got[k][o] = calloc((size_t)ts_shape_elements(s) * (size_t)ts_elem_storage_bytes(s->elem) + 1, 1);
    }
  }
  int fail_g = -1;
  if (a.fail_instr)
    for (int k = 0; k < ts_rt_program_ninstrs(p); k++)
      if (!strcmp(ts_rt_program_instr_names(p)[k], a.fail_instr)) fail_g = k;
  if (a.fail_instr && fail_g < 0) {
    fprintf(stderr, "no instruction %s\n", a.fail_instr);
    { rc = 1; goto out; }
  }
  int hier_g = -1, flat_g = -1;
  for (int k = 0; k < ts_rt_program_ninstrs(p); k++) {
    if (a.expect_hier && !strcmp(ts_rt_program_instr_names(p)[k], a.expect_hier)) hier_g = k;
    if (a.expect_flat && !strcmp(ts_rt_program_instr_names(p)[k], a.expect_flat)) flat_g = k;
  }
  if ((a.expect_hier && hier_g < 0) || (a.expect_flat && flat_g < 0)) {
    fprintf(stderr, "no instruction %s\n", a.expect_hier && hier_g < 0 ? a.expect_hier : a.expect_flat);
    { rc = 1; goto out; }
  }
  t = calloc((size_t)ndev, sizeof *t);
  comms = calloc((size_t)ndev + 1, sizeof *comms);
  first = 0;
  last = ndev;
  if (mpi_world) {
    comms[mpi_rank] = mpi_world;
    first = mpi_rank;
    last = mpi_rank + 1;
  } else if (ndev > 1 && ts_coll_comm_create_threads(ndev, comms) != TS_OK) {
    fprintf(stderr, "cannot create the threads world\n");
    { rc = 1; goto out; }
  }
  th = calloc((size_t)ndev, sizeof *th);
  for (int d = first; d < last; d++) {
    t[d] = (dev_t){.a = &a, .p = p, .world = ndev > 1 ? comms[d] : NULL, .dev = d, .ndev = ndev, .np = np,
                   .args = args, .got = got, .fail_gindex = d == a.fail_dev ? fail_g : -1, .hier_gindex = hier_g, .flat_gindex = flat_g};
    if (mpi_world) device_main(&t[d]);
    else pthread_create(&th[d], NULL, device_main, &t[d]);
  }
  if (!mpi_world)
    for (int d = first; d < last; d++) pthread_join(th[d], NULL);

  /* Verdicts. */
  int64_t bad = 0;
  if (a.fail_dev >= 0) {
    for (int d = first; d < last; d++) {
      printf("device %d: %s after %.2f s%s%s\n", d, ts_status_string(t[d].st), t[d].seconds,
             t[d].diag.text ? ": " : "", t[d].diag.text ? t[d].diag.text : "");
      EXPECT(t[d].st != TS_OK);
      EXPECT(t[d].seconds < 20.0); /* the default deadline is 300 s: only an abort ends it this fast */
    }
  } else {
    for (int d = first; d < last; d++)
      if (t[d].st != TS_OK) {
        fprintf(stderr, "device %d: %s\n", d, t[d].diag.text ? t[d].diag.text : ts_status_string(t[d].st));
        bad++;
      }
    for (int s = 0; s < steps && !bad; s++)
      for (int d = first; d < last; d++) {
        ts_array_t w[4096];
        int n = ts_value_leaves(want[(size_t)s * ndev + d], w, 4096);
        EXPECT_EQ(n, nout);
        for (int o = 0; o < n && o < nout; o++) {
          char what[128];
          snprintf(what, sizeof what, "step %d device %d output %d", s + 1, d, o);
          int64_t b = compare(what, &w[o], got[(size_t)s * ndev + d][o]);
          if (b) fprintf(stderr, "%s: %lld of %lld elements differ\n", what, (long long)b, (long long)ts_array_count(&w[o]));
          bad += b != 0;
        }
      }
    for (int d = first; d < last; d++) {
      if (a.expect_inplace >= 0) EXPECT(t[d].inplace_ptr_ok);
      if (a.expect_hier) EXPECT(t[d].hier_events >= steps && t[d].hier_bad == 0);
      if (a.expect_flat) EXPECT(t[d].flat_events >= steps && t[d].flat_bad == 0);
    }
  }
  EXPECT_EQ(bad, 0);
  if (failures == 0)
    printf("result: match (%d steps, devices %d..%d of %d, %d outputs)\n", steps, first, last - 1, ndev, nout);
  else
    printf("result: FAILED (%d)\n", failures);

  rc = failures ? 1 : 0;
out:
  for (int d = first; t && d < last; d++) ts_diag_free(&t[d].diag);
  if (!mpi_world && comms)
    for (int d = 0; d < ndev && ndev > 1; d++) ts_coll_comm_destroy(comms[d]);
  for (size_t k = 0; args && k < (size_t)(steps + 1) * ndev * np; k++) ts_value_unref(args[k]);
  for (size_t k = 0; want && k < (size_t)steps * ndev; k++) ts_value_unref(want[k]);
  for (size_t k = 0; got && k < (size_t)steps * ndev; k++) {
    for (int o = 0; got[k] && o < nout; o++) free(got[k][o]);
    free(got[k]);
  }
  free(got);
  free(args);
  free(want);
  free(t);
  free(th);
  free(comms);
  ts_interp_destroy(it);
  ts_interp_release_buffers();
  ts_rt_program_destroy(p);
  ts_codegen_destroy(cg);
  if (pm != m) ts_hlo_module_destroy(pm);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&diag);
  if (mpi_world) {
    ts_coll_comm_destroy(mpi_world);
    ts_coll_mpi_finalize();
  }
  return rc;
}
