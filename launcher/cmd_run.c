/* tessera run: the main job. Partitions a sharded module for the job's
 * devices and runs the per-device program on every one of them (ranks of
 * mpirun/srun, processes given --task_id, or threads with --devices N) for
 * --steps K, as a training loop with --loop; --check compares the final
 * outputs with the reference interpreter. --devices 1 on a module written
 * for several devices (or --reference) runs the reference interpreter. */
#include "run_internal.h"
#include "ts_env.h"
#include "ts_checkpoint.h"
#include "ts_hang.h"
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_codegen.h"
#include "ts_kernels.h"
#include "ts_launcher.h"
#include "ts_partitioner.h"
#include "ts_pipeline.h"
#include "ts_runtime.h"
#include "ts_scheduler.h"
#include "ts_sharding.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np N tessera run [flags] MODULE.hlo\n"
          "       tessera run --devices N [flags] MODULE.hlo\n"
          "       tessera run --task_id I --num_nodes N --address HOST:PORT [flags] MODULE.hlo\n"
          "\n"
          "Runs an HLO module on every device of the job. A module with sharding\n"
          "annotations is partitioned for the job's devices (partition count from\n"
          "the header's num_partitions, else the device count its shardings name,\n"
          "else the job's size) and each device runs its part with real\n"
          "collectives; a module without shardings runs as the per-device program.\n"
          "Rank, size and local rank come from mpirun (OMPI_COMM_WORLD_*), srun\n"
          "(SLURM_*), the --task_id/--num_nodes/--address flags (XLA's multi-host\n"
          "runner: one process per device, TCP rendezvous at ADDRESS), or --devices N\n"
          "(N devices as threads of this process). --devices 1 on a module written\n"
          "for several devices runs its unpartitioned meaning with the reference\n"
          "interpreter.\n"
          "\n"
          "  --devices N           devices as threads of this process\n"
          "  --task_id I --num_nodes N --address HOST:PORT\n"
          "                        one process per device, rendezvous at HOST:PORT\n"
          "  --steps K             run K steps (default 1); prints 'step K time_ms T loss L'\n"
          "                        (loss: the first scalar floating-point output)\n"
          "  --loop                a training loop: outputs that alias parameters\n"
          "                        (input_output_alias) feed back into them each step;\n"
          "                        the other parameters (the data batch) come fresh each\n"
          "                        step from an input feeder thread\n"
          "  --inputs DIR          parameter i from DIR/param<i>.npy; data parameters of\n"
          "                        step K from DIR/step<K>/param<i>.npy when present\n"
          "  --random-inputs SEED  seeded random inputs (the default, seed 0): floats\n"
          "                        uniform in (0, 1], index parameters in range for their\n"
          "                        use, a new batch per step; with --loop, weights\n"
          "                        (aliased parameters) uniform in +-1/sqrt(fan-in) and\n"
          "                        biases 0, as a model initialiser draws them\n"
          "  --outputs DIR         rank 0 writes leaf i of the final result as DIR/out<i>.npy\n"
          "                        (assembled from every device's shard)\n"
          "  --check               compare the final outputs with the reference\n"
          "                        interpreter's run of the same steps on one device\n"
          "                        (exit 1 on a mismatch)\n"
          "  --tolerance R         relative tolerance of --check (default 1e-4)\n"
          "  --compile-only        partition and assign buffers, print per-device memory\n"
          "                        and the collectives, do not run\n"
          "  --no-partition        the module is already the per-device program: run it\n"
          "                        as written on every device (the default for a dump\n"
          "                        made after XLA's SPMD partitioner, entry *_spmd)\n"
          "  --trace FILE.json     a Chrome/Perfetto trace, one track per rank, merged on rank 0\n"
          "  --no-schedule         run the partitioned program in program order with\n"
          "                        synchronous collectives (by default the latency-hiding\n"
          "                        scheduler makes collectives asynchronous and overlaps\n"
          "                        them with compute)\n"
          "  --cost-model SPEC     the scheduler's cost model (as tessera opt takes it)\n"
          "  --cost-model-preset P h100, b200 or host (default host)\n"
          "  --memory-limit BYTES  the scheduler's bytes live at once per device (K, M, G,\n"
          "                        T suffixes; default: program order's peak)\n"
          "  --overlap-limit L     async collectives of one kind in flight at once: N, or\n"
          "                        KIND=N,... (default 1)\n"
          "  --slices S            the mesh as S slices (multislice; default: one per\n"
          "                        host); collectives that span slices run hierarchically\n"
          "  --backend B           the collectives' data path under mpirun: mpi (default) or ucx\n"
          "  --timeout SEC         deadline of every collective (default\n"
          "                        TESSERA_COLL_TIMEOUT, else 300)\n"
          "  --no-bind             do not bind ranks or device threads to cores\n"
          "  --num-partitions N    override the module's num_partitions\n"
          "  --replica-count N     override the module's replica_count\n"
          "  --hang-timeout SEC    the hang detector declares a hang when no device made\n"
          "                        progress for SEC seconds while a step runs (default 60)\n"
          "  --hang-digest FILE    the hang digest as JSON (the text goes to stderr)\n"
          "  --abort-on-hang[=true|false]  abort every rank after a digest (default true)\n"
          "  --hang-coordinator ADDR  report to a running coordinator (secret from\n"
          "                        TESSERA_HANG_SECRET) instead of starting one beside rank 0\n"
          "  --no-hang-detector    run without the hang detector\n"
          "  --platform=P          cpu or gpu: where the devices run (default cpu; gpu\n"
          "                        needs a CUDA build and a CUDA device: one GPU per\n"
          "                        rank, the local rank's modulo the devices seen,\n"
          "                        CUDA_VISIBLE_DEVICES respected)\n"
          "  --kernels=K           compiled (default): fuse the per-device program and run\n"
          "                        LLVM-compiled kernels for the fusions; interp: every\n"
          "                        instruction on the plain kernels\n"
          "  --no-kernel-cache     compile the kernels from IR without reading or writing\n"
          "                        the kernel cache (TESSERA_CACHE_DIR, default\n"
          "                        ~/.cache/tessera; TESSERA_CACHE_DIR=off does the same)\n"
          "  --reference           run the reference interpreter (one process; --devices\n"
          "                        N simulates N devices of a per-device module)\n"
          "  --trap-nonfinite      (reference) stop at the first instruction that makes a\n"
          "                        NaN or infinity out of finite operands\n"
          "  -h, --help            this help\n"
          "\n"
          "checkpoints (need --loop):\n%s"
          "\n"
          "partitioner flags (named after XLA's):\n%s"
          "\n"
          "A rank that fails aborts the job: the collectives of every rank stop and\n"
          "every process exits non-zero. TESSERA_FAULT injects a fault for rehearsals\n"
          "(stall:rank=R|all:step=K, crash:rank=R:step=K, netdrop:ranks=A,B:step=K,\n"
          "module:rank=R, fingerprint:rank=R, input-stall:rank=R:step=K,\n"
          "slow:rank=R[:step=K][:seconds=S]). Exit codes: 0 ok, 1 --check mismatch, 2 bad\n"
          "input or usage, 3 cannot run here, 4 a runtime or peer failure.\n",
          ts_ckpt_flags_help, ts_partition_flags_help);
}

typedef struct {
  int64_t devices, steps, slices, partitions, replicas, task_id, num_nodes;
  const char *address, *inputs, *outputs, *trace, *path;
  const char *hang_digest, *hang_coordinator, *cost_model, *cost_preset;
  uint64_t seed;
  bool seeded, loop, check, compile_only, reference, trap, bind, hang, abort_on_hang, schedule, no_partition;
  bool compiled; /* --kernels=compiled (default) or interp */
  bool kernel_cache; /* the on-disk kernel cache (default); --no-kernel-cache */
  ts_platform_t platform; /* --platform; resolved (cpu or gpu) after the flags */
  int gpus;               /* CUDA devices this process sees (platform gpu) */
  double tolerance, timeout, hang_timeout;
  ts_coll_backend_t backend;
  ts_partition_opts_t popts;
  ts_sched_opts_t sched; /* overlap limits; the cost model is set at scheduling */
  ts_ckpt_flags_t ckpt;  /* --checkpoint-dir, --checkpoint-every, --keep, --resume */
} run_flags_t;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- module facts -------------------------------------------------------------- */

/* Entry parameter each root leaf updates (input_output_alias with an empty
 * parameter index), -1 where none: out_param[k] for k < nleaves. */
static void alias_map(const ts_hlo_module_t *m, int *out_param, int nleaves) {
  for (int k = 0; k < nleaves; k++) out_param[k] = -1;
  const ts_hlo_attr_t *a = ts_hlo_module_attr(m, "input_output_alias");
  if (!a || a->kind != TS_ATTR_ALIASES) return;
  bool tuple = m->entry->root->shape->elem == TS_TUPLE;
  for (int i = 0; i < a->v.aliases.n; i++) {
    const ts_alias_t *al = &a->v.aliases.v[i];
    if (al->param_index.n != 0 || al->param_number < 0 || al->param_number >= m->entry->nparams) continue;
    int64_t k = tuple ? (al->output_index.n == 1 ? al->output_index.v[0] : -1) : (al->output_index.n == 0 ? 0 : -1);
    /* Leaf k of the flattened root is tuple element k only for flat tuples
     * of arrays, which is what training steps return. */
    if (k >= 0 && k < nleaves) out_param[k] = (int)al->param_number;
  }
}

/* The largest device count any sharding of the module names (0: none). */
static int64_t sharding_devices(ts_hlo_module_t *m, bool *any) {
  int64_t most = 0;
  *any = false;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[k];
      if (!i->sharding) continue;
      *any = true;
      ts_sharding_value_t *sv;
      if (ts_sharding_from_syntax(m->arena, i->sharding, i->shape, &sv) != TS_OK) continue;
      int64_t n = ts_sharding_num_devices(sv);
      if (n > most) most = n;
    }
  return most;
}

static ts_status_t sharding_of(ts_hlo_module_t *m, const ts_hlo_instr_t *i, ts_sharding_value_t **out) {
  if (!i->sharding) return ts_sharding_simple(m->arena, TS_SHARD_REPLICATED, out);
  return ts_sharding_from_syntax(m->arena, i->sharding, i->shape, out);
}

static int shape_leaves(const ts_shape_t *s) {
  if (s->elem != TS_TUPLE) return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++) n += shape_leaves(s->tuple[i]);
  return n;
}

/* The first scalar floating-point leaf (the loss), NAN when none. */
static double loss_of(const ts_array_t *leaves, int n) {
  for (int k = 0; k < n; k++)
    if (leaves[k].rank == 0 && ts_elem_is_float(leaves[k].elem)) return ts_load_f(leaves[k].elem, leaves[k].data, 0);
  return NAN;
}

static void print_step(int64_t step, double ms, double loss) {
  if (isnan(loss)) printf("step %lld time_ms %.3f\n", (long long)step, ms);
  else printf("step %lld time_ms %.3f loss %.9g\n", (long long)step, ms, loss);
  fflush(stdout);
}

/* One summary line per leaf (shape, finite count, min, max, mean). */
static void summarize(ts_value_t *result) {
  int n = ts_value_leaves(result, NULL, 0);
  ts_array_t *leaves = ts_calloc((size_t)n + 1, sizeof *leaves);
  if (!leaves) return;
  ts_value_leaves(result, leaves, n);
  for (int k = 0; k < n; k++) {
    const ts_array_t *a = &leaves[k];
    int64_t cnt = ts_array_count(a), finite = 0;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cnt; j++) {
      double v;
      if (ts_elem_is_float(a->elem) || ts_elem_is_complex(a->elem)) {
        double re, im;
        ts_load_c(a->elem, a->data, j, &re, &im);
        if (!isfinite(re) || !isfinite(im)) continue;
        v = re;
      } else if (ts_elem_is_unsigned_int(a->elem)) {
        v = (double)(uint64_t)ts_load_i(a->elem, a->data, j);
      } else {
        v = (double)ts_load_i(a->elem, a->data, j);
      }
      finite++;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      sum += v;
    }
    printf("out%d %s[", k, ts_elem_name(a->elem));
    for (int d = 0; d < a->rank; d++) printf(d ? ",%lld" : "%lld", (long long)a->dims[d]);
    printf("] finite %lld/%lld", (long long)finite, (long long)cnt);
    if (finite) printf(" min %.6g max %.6g mean %.6g", lo, hi, sum / (double)finite);
    printf("\n");
  }
  ts_free(leaves);
}

/* ---- the job ----------------------------------------------------------------- */

typedef struct {
  const run_flags_t *f;
  run_env_t env;
  ts_pipeline_t pipe;  /* owns the modules, the schedule and the program below */
  ts_hlo_module_t *m;  /* as written (the partitioner adds propagated shardings) */
  ts_hlo_module_t *pm; /* the per-device program: m itself when not partitioned */
  bool partitioned;
  int64_t R, P;
  int np;
  bool *is_weight;     /* per parameter: an output updates it and --loop feeds it back */
  int *out_param;      /* per root leaf of m: the parameter it updates, -1 */
  int nleaves;
  ts_sharding_value_t **param_sv, *root_sv;
  ts_interp_inputs_t inputs;
  ts_value_t **init;   /* step 1's full value of every parameter */

  ts_rt_program_t *prog;
  ts_codegen_t *cg;     /* the compiled kernels the program runs, NULL when none */
  uint64_t fingerprint; /* of the per-device program's text */
  ts_sched_result_t *sched; /* the scheduler's statistics, NULL when not scheduled */
  int *first_leaf;     /* per parameter: its first input leaf */
  ts_interp_feeder_t *feeder;
  int nlocal, first;   /* this process's devices: first .. first + nlocal */
  ts_coll_comm_t **comms;
  int slices;
  int hosts; /* run_count_hosts: distinct host names, 1 for threads */
  atomic_bool failed;

  /* The hang detector (rank 0 spawns the coordinator). */
  ts_hang_fault_t fault;
  ts_hang_rendezvous_t rv; /* rv.addr "" when the detector is off */
  uint64_t launch_id;
  pid_t coordinator;
  atomic_bool hang_watched; /* a worker connected: the coordinator may be writing a digest */

  /* Per local device. */
  ts_status_t *status;
  ts_diag_t *diags;
  ts_hang_progress_t *progress;

  /* Device 0 (on rank 0): what it gathered. */
  ts_value_t **douts;  /* every device's final result */
  ts_rt_event_t **events;
  size_t *nevents;
  double *step_ms, *loss;
  ts_rt_step_times_t steady; /* summed over steps 2..K */
  int64_t steady_steps;

  /* Checkpoints (checkpoint/): NULL without --checkpoint-dir / --resume. */
  ts_ckpt_t *ckpt;
  int64_t start_step; /* 1, or the step after the resumed checkpoint */
} job_t;

/* Copies parameter p of `full` (its device's shard when partitioned) into the
 * device's input leaves. */
static ts_status_t fill_param(job_t *j, ts_rt_device_t *d, int64_t dev, int p, ts_value_t *full, ts_diag_t *diag) {
  ts_value_t *shard = NULL;
  if (j->partitioned) {
    ts_status_t st = ts_interp_shard_value(full, j->param_sv[p], dev % j->P, j->pm->entry->params[p]->shape, &shard);
    if (st != TS_OK) {
      ts_diag_plain(diag, "cannot cut parameter %d for device %lld: %s", p, (long long)dev, ts_status_string(st));
      return st;
    }
  } else {
    shard = ts_value_ref(full);
  }
  ts_array_t leaves[256];
  int n = ts_value_leaves(shard, leaves, 256);
  ts_status_t st = TS_OK;
  for (int k = 0; k < n && k < 256; k++) {
    ts_array_t *dst = ts_rt_device_input(d, j->first_leaf[p] + k);
    size_t bytes = ts_array_bytes(&leaves[k]);
    if (!dst || ts_array_bytes(dst) != bytes) {
      ts_diag_plain(diag, "parameter %d leaf %d: %zu bytes for a %zu-byte input", p, k, bytes,
                    dst ? ts_array_bytes(dst) : (size_t)0);
      st = TS_ERR_INTERNAL;
      break;
    }
    memcpy(dst->data, leaves[k].data, bytes);
  }
  ts_value_unref(shard);
  return st;
}

/* all-gather of `bytes` bytes from every device; *out (world size * bytes) is
 * the caller's to free. */
static ts_status_t gather_bytes(ts_coll_comm_t *world, const void *mine, size_t bytes, void **out) {
  int n = ts_coll_comm_size(world);
  void *all = ts_malloc((size_t)n * bytes + 1);
  if (!all) return TS_ERR_NOMEM;
  ts_coll_req_t *req;
  ts_status_t st = bytes ? ts_coll_allgather_post(world, mine, all, bytes, TS_U8, &req) : ts_coll_barrier_post(world, &req);
  if (st == TS_OK) st = ts_coll_wait(req, -1);
  if (st != TS_OK) {
    ts_free(all);
    return st;
  }
  *out = all;
  return TS_OK;
}

/* Every device's outputs to device 0 (j->douts). Collective over the world. */
static ts_status_t gather_outputs(job_t *j, ts_rt_device_t *d, ts_coll_comm_t *world, int64_t dev) {
  int nout = ts_rt_program_noutputs(j->prog), W = ts_coll_comm_size(world);
  const ts_shape_t *root = j->pm->entry->root->shape;
  ts_array_t *leaves = NULL; /* device 0: leaves[w * nout + k] is leaf k of device w's value */
  if (dev == 0) {
    if (!(leaves = ts_calloc((size_t)W * (size_t)nout + 1, sizeof *leaves))) return TS_ERR_NOMEM;
    for (int w = 0; w < W; w++) {
      if (!(j->douts[w] = ts_value_new_uninit(root))) {
        ts_free(leaves);
        return TS_ERR_NOMEM;
      }
      ts_value_leaves(j->douts[w], leaves + (size_t)w * (size_t)nout, nout);
    }
  }
  ts_status_t st = TS_OK;
  for (int k = 0; k < nout && st == TS_OK; k++) {
    const ts_array_t *a = ts_rt_device_output(d, k);
    size_t bytes = ts_array_bytes(a);
    void *all;
    if ((st = gather_bytes(world, a->data, bytes, &all)) != TS_OK) break;
    for (int w = 0; leaves && w < W; w++)
      memcpy(leaves[(size_t)w * (size_t)nout + (size_t)k].data, (char *)all + (size_t)w * bytes, bytes);
    ts_free(all);
  }
  ts_free(leaves);
  return st;
}

/* Every device's trace events to device 0. Collective over the world. */
static ts_status_t gather_trace(job_t *j, ts_rt_device_t *d, ts_coll_comm_t *world, int64_t dev, uint64_t t0) {
  size_t n;
  const ts_rt_event_t *ev = ts_rt_device_trace(d, &n);
  int W = ts_coll_comm_size(world);
  int64_t mine = (int64_t)n, *counts;
  TS_CHECK(gather_bytes(world, &mine, sizeof mine, (void **)&counts));
  int64_t most = 0;
  for (int w = 0; w < W; w++)
    if (counts[w] > most) most = counts[w];
  /* Padded to the longest, times relative to this device's start. */
  ts_rt_event_t *buf = ts_calloc((size_t)most + 1, sizeof *buf);
  if (!buf) {
    ts_free(counts);
    return TS_ERR_NOMEM;
  }
  for (size_t k = 0; k < n; k++) {
    buf[k] = ev[k];
    buf[k].t_begin_ns = ev[k].t_begin_ns > t0 ? ev[k].t_begin_ns - t0 : 0;
    buf[k].t_end_ns = ev[k].t_end_ns > t0 ? ev[k].t_end_ns - t0 : 0;
  }
  void *all;
  ts_status_t st = gather_bytes(world, buf, (size_t)most * sizeof *buf, &all);
  ts_free(buf);
  if (st == TS_OK && dev == 0) {
    for (int w = 0; w < W && st == TS_OK; w++) {
      j->nevents[w] = (size_t)counts[w];
      if (!(j->events[w] = ts_malloc((size_t)counts[w] * sizeof(ts_rt_event_t) + 1))) st = TS_ERR_NOMEM;
      else memcpy(j->events[w], (char *)all + (size_t)w * (size_t)most * sizeof(ts_rt_event_t),
                  (size_t)counts[w] * sizeof(ts_rt_event_t));
    }
  }
  if (st == TS_OK) ts_free(all);
  ts_free(counts);
  return st;
}

typedef struct {
  job_t *j;
  ts_coll_comm_t *world;
  ts_hang_fault_hook_t *hook;
} abort_arg_t;

/* The coordinator declared a hang: stop this device wherever it waits. */
static void on_hang_abort(void *arg, const char *reason) {
  abort_arg_t *a = arg;
  atomic_store(&a->j->failed, true);
  ts_hang_fault_hook_abort(a->hook);
  ts_coll_comm_abort(a->world, TS_ERR_REMOTE);
}

/* One device's whole run. */
static ts_status_t device_work(job_t *j, int local, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  int64_t dev = j->first + local;
  ts_coll_comm_t *world = j->comms[local];
  ts_rt_device_t *d = NULL;
  ts_array_t **ckpt_state = NULL;
  ts_status_t st = TS_OK;
  if (j->env.mode == RUN_THREADS && f->bind) run_bind(local, j->nlocal, false);
  ts_hang_progress_t *prog = &j->progress[local];
  ts_hang_fault_hook_t hook;
  ts_hang_worker_t *hw = NULL;
  ts_hang_fault_hook_init(&hook, &j->fault, (int)dev, prog);
  abort_arg_t abort_arg = {j, world, &hook};
  TS_CHECK_GOTO(ts_hang_fault_hook_mark(&hook, j->pm, ts_rt_program_instr_names(j->prog), ts_rt_program_ninstrs(j->prog)),
                st, done);
  ts_rt_device_opts_t o = {.device_id = dev, .world = world, .slices = j->slices, .progress = prog,
                           .trace = f->trace != NULL, .hook = ts_hang_fault_hook, .hook_arg = &hook};
  TS_CHECK_GOTO(ts_rt_device_create(j->prog, &o, &d, diag), st, done);
  if (j->rv.addr[0]) {
    ts_hang_worker_opts_t wo;
    ts_hang_worker_opts_default(&wo);
    wo.addr = j->rv.addr;
    wo.secret = j->rv.secret;
    wo.progress = prog;
    wo.period_s = f->hang_timeout / 8 < 1 ? f->hang_timeout / 8 : 1;
    wo.on_abort = on_hang_abort;
    wo.abort_arg = &abort_arg;
    wo.abort_exit_s = 10;
    wo.abort_exit_code = 4;
    wo.connect_timeout_s = 10;
    ts_diag_t hd = {0};
    if (ts_hang_worker_start(&wo, &hw, &hd) != TS_OK) {
      /* Losing the watchdog must not stop the workload: warn once. */
      static atomic_flag warned = ATOMIC_FLAG_INIT;
      if (!atomic_flag_test_and_set(&warned))
        fprintf(stderr, "tessera run: warning: running without the hang detector: %s\n",
                hd.text ? hd.text : "cannot reach the coordinator");
      hw = NULL;
    } else {
      atomic_store(&j->hang_watched, true);
    }
    ts_diag_free(&hd);
  }
  /* ---- checkpoint: this device's state buffers; the resumed state ---- */
  if (j->ckpt) {
    if (!(ckpt_state = ts_calloc((size_t)ts_ckpt_narrays(j->ckpt) + 1, sizeof *ckpt_state))) {
      st = TS_ERR_NOMEM;
      goto done;
    }
    for (int k = 0; k < ts_ckpt_narrays(j->ckpt); k++)
      ckpt_state[k] = ts_rt_device_input(d, j->first_leaf[ts_ckpt_array_param(j->ckpt, k)]);
    TS_CHECK_GOTO(ts_ckpt_restore(j->ckpt, local, world, ckpt_state, diag), st, done);
  }
  /* ---- */
  {
    ts_coll_req_t *req;
    TS_CHECK_GOTO(ts_coll_barrier_post(world, &req), st, done);
    TS_CHECK_GOTO(ts_coll_wait(req, -1), st, done);
  }
  uint64_t t0 = now_ns();
  for (int64_t step = j->start_step; step <= f->steps; step++) {
    double s0 = ts_now_ms();
    ts_value_t *const *data = NULL;
    TS_CHECK_GOTO(ts_hang_fault_before_input(&hook, step), st, done);
    if (step > 1 && j->feeder) {
      atomic_store_explicit(&prog->activity, TS_HANG_INPUT_WAIT, memory_order_relaxed);
      TS_CHECK_GOTO(ts_interp_feeder_acquire(j->feeder, step, f->timeout, &data, diag), st, done);
    }
    for (int p = 0; p < j->np && st == TS_OK; p++) {
      if (step > 1 && f->loop && j->is_weight[p]) continue; /* updated in place by the last step */
      ts_value_t *full = step > 1 && data && data[p] ? data[p] : j->init[p];
      st = fill_param(j, d, dev, p, full, diag);
    }
    if (data) ts_interp_feeder_release(j->feeder, step);
    if (st != TS_OK) goto done;
    TS_CHECK_GOTO(ts_rt_device_run(d, step, diag), st, done);
    /* checkpoint: snapshot / commit at the step boundary (inside the step's time) */
    if (j->ckpt) TS_CHECK_GOTO(ts_ckpt_step_end(j->ckpt, local, world, step, ckpt_state, diag), st, done);
    if (dev == 0) {
      double ms = ts_now_ms() - s0;
      int nout = ts_rt_program_noutputs(j->prog);
      double loss = NAN;
      for (int k = 0; k < nout && isnan(loss); k++) loss = loss_of(ts_rt_device_output(d, k), 1);
      j->step_ms[step - 1] = ms;
      j->loss[step - 1] = loss;
      print_step(step, ms, loss);
      if (step > j->start_step || f->steps == j->start_step) {
        ts_rt_step_times_t t;
        ts_rt_device_step_times(d, &t);
        j->steady.total_ns += t.total_ns;
        j->steady.kernel_ns += t.kernel_ns;
        j->steady.collective_ns += t.collective_ns;
        j->steady.other_ns += t.other_ns;
        j->steady_steps++;
      }
    }
  }
  /* The output gather is collectives too: a rank frozen after its last
   * step leaves its peers waiting here, which the hang detector must see. */
  atomic_store_explicit(&prog->activity, TS_HANG_COLLECTIVE, memory_order_relaxed);
  TS_CHECK_GOTO(gather_outputs(j, d, world, dev), st, done);
  if (f->trace) TS_CHECK_GOTO(gather_trace(j, d, world, dev, t0), st, done);
done:
  if (st != TS_OK) {
    atomic_store(&j->failed, true);
    atomic_store_explicit(&prog->error, st, memory_order_relaxed);
    atomic_store_explicit(&prog->activity, TS_HANG_FAILED, memory_order_relaxed);
    /* Stop every other device instead of letting it wait for this one. */
    if (st != TS_ERR_REMOTE) ts_coll_comm_abort(world, st);
  } else {
    atomic_store_explicit(&prog->activity, TS_HANG_FINISHED, memory_order_relaxed);
  }
  if (hw) {
    ts_hang_worker_stop(hw, 5);
    const char *lines = ts_hang_worker_stragglers(hw);
    if (dev == 0 && lines && *lines) {
      printf("%s%s", lines, lines[strlen(lines) - 1] == '\n' ? "" : "\n");
      fflush(stdout);
    }
    char reason[256];
    if (ts_hang_worker_aborted(hw, reason, sizeof reason)) {
      ts_diag_free(diag);
      ts_diag_plain(diag, "aborted by the hang detector: %s", reason);
      st = TS_ERR_REMOTE;
    }
    ts_hang_worker_destroy(hw);
  }
  ts_hang_fault_hook_fini(&hook);
  ts_free(ckpt_state);
  ts_rt_device_destroy(d);
  ts_interp_release_buffers();
  return st;
}

typedef struct {
  job_t *j;
  int local;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  w->j->status[w->local] = device_work(w->j, w->local, &w->j->diags[w->local]);
  return NULL;
}

/* ---- the reference ------------------------------------------------------------ */

/* Runs the reference interpreter for the job's steps on the job's inputs.
 * ndev 0: the unpartitioned meaning; N: N simulated devices of a per-device
 * module (outs[0..N)). print: a step line per step. */
static ts_status_t reference_run(job_t *j, int ndev, bool print, ts_value_t **outs, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  ts_interp_t *it = NULL;
  int nd = ndev > 0 ? ndev : 1, np = j->np;
  ts_value_t **args = ts_calloc((size_t)(nd * np) + 1, sizeof *args), **cur = ts_calloc((size_t)np + 1, sizeof *cur);
  ts_status_t st = TS_OK;
  if (!args || !cur) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  ts_interp_opts_t io = {.ndevices = ndev, .num_partitions = f->partitions, .replica_count = f->replicas,
                         .trap_nonfinite = f->trap};
  TS_CHECK_GOTO(ts_interp_create(j->m, &io, &it, diag), st, done);
  for (int p = 0; p < np; p++) cur[p] = ts_value_ref(j->init[p]);
  for (int64_t step = 1; step <= f->steps; step++) {
    for (int p = 0; p < np && step > 1; p++) {
      if (f->loop && j->is_weight[p]) continue;
      ts_value_unref(cur[p]);
      cur[p] = NULL;
      if (j->is_weight[p]) cur[p] = ts_value_ref(j->init[p]);
      else TS_CHECK_GOTO(ts_interp_param_value(&j->inputs, p, step, &cur[p], diag), st, done);
    }
    for (int d = 0; d < nd; d++)
      for (int p = 0; p < np; p++) args[d * np + p] = cur[p];
    for (int d = 0; d < nd; d++) {
      ts_value_unref(outs[d]);
      outs[d] = NULL;
    }
    double t0 = ts_now_ms();
    TS_CHECK_GOTO(ts_interp_run(it, args, outs, diag), st, done);
    double ms = ts_now_ms() - t0;
    ts_array_t leaves[4096];
    int n = ts_value_leaves(outs[0], leaves, 4096);
    if (print) print_step(step, ms, loss_of(leaves, n < 4096 ? n : 4096));
    if (f->loop)
      for (int k = 0; k < n && k < j->nleaves; k++) {
        int p = j->out_param[k];
        if (p < 0 || !j->is_weight[p]) continue;
        ts_value_t *v = ts_value_new_uninit(j->m->entry->params[p]->shape);
        if (!v) {
          st = TS_ERR_NOMEM;
          goto done;
        }
        memcpy(v->a.data, leaves[k].data, ts_array_bytes(&leaves[k]));
        ts_value_unref(cur[p]);
        cur[p] = v;
      }
  }
done:
  if (cur)
    for (int p = 0; p < np; p++) ts_value_unref(cur[p]);
  ts_free(cur);
  ts_free(args);
  ts_interp_destroy(it);
  return st;
}

/* --devices 1 (or --reference): the interpreter is the whole run. */
static ts_status_t run_reference_mode(job_t *j, ts_diag_t *diag) {
  int ndev = j->f->devices > 1 ? (int)j->f->devices : 0;
  int nd = ndev ? ndev : 1;
  ts_value_t **outs = ts_calloc((size_t)nd + 1, sizeof *outs);
  if (!outs) return TS_ERR_NOMEM;
  ts_status_t st = reference_run(j, ndev, true, outs, diag);
  if (st == TS_OK) {
    summarize(outs[0]);
    fflush(stdout);
    if (j->f->outputs) st = ts_interp_write_outputs(j->f->outputs, outs[0], diag);
  }
  for (int d = 0; d < nd; d++) ts_value_unref(outs[d]);
  ts_free(outs);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- after the run (rank 0) ------------------------------------------------- */

static ts_status_t finish_rank0(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  int W = j->env.ndevices;
  ts_value_t *got = NULL, **want = NULL;
  ts_status_t st = TS_OK;
  if (j->partitioned) {
    st = ts_interp_unshard_values(j->douts, W, j->root_sv, j->m->entry->root->shape, &got);
    if (st != TS_OK) {
      ts_diag_plain(diag, "cannot assemble the result from the devices' shards (%s)", ts_status_string(st));
      return st;
    }
  } else {
    got = ts_value_ref(j->douts[0]);
  }
  summarize(got);
  if (j->steady_steps > 0 && j->steady.total_ns > 0) {
    /* The median step (after the first, which pays for first touches):
     * a shared machine makes the mean follow its worst hiccup. */
    int64_t first = f->steps > j->start_step ? j->start_step : j->start_step - 1, n = f->steps - first;
    double *t = ts_calloc((size_t)n, sizeof *t);
    if (t) {
      memcpy(t, j->step_ms + first, (size_t)n * sizeof *t);
      qsort(t, (size_t)n, sizeof *t, cmp_double);
      printf("steps %lld..%lld: median time_ms %.3f", (long long)(first + 1), (long long)f->steps,
             n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
      ts_free(t);
    }
    double tot = (double)j->steady.total_ns;
    printf("; device 0's time: kernels %.1f%%, collectives %.1f%%, runtime overhead %.1f%%\n",
           100.0 * (double)j->steady.kernel_ns / tot, 100.0 * (double)j->steady.collective_ns / tot,
           100.0 * (double)j->steady.other_ns / tot);
  }
  fflush(stdout);
  if (f->outputs) TS_CHECK_GOTO(ts_interp_write_outputs(f->outputs, got, diag), st, done);
  if (f->trace) {
    ts_buf_t trace = {0};
    st = ts_rt_trace_json(ts_rt_program_instr_names(j->prog), W, (const ts_rt_event_t *const *)j->events, j->nevents,
                          NULL, &trace);
    if (st == TS_OK) st = ts_cli_write_output(f->trace, trace.data, trace.len, diag);
    ts_buf_free(&trace);
    if (st != TS_OK) goto done;
    printf("trace: %s (%d ranks)\n", f->trace, W);
  }
  if (f->check) {
    int nref = j->partitioned ? 0 : W;
    int nd = nref ? nref : 1;
    want = ts_calloc((size_t)nd + 1, sizeof *want);
    if (!want) {
      st = TS_ERR_NOMEM;
      goto done;
    }
    printf("check: the reference interpreter runs the same %lld step%s on one device\n", (long long)f->steps,
           f->steps == 1 ? "" : "s");
    fflush(stdout);
    TS_CHECK_GOTO(reference_run(j, nref, false, want, diag), st, done);
    int bad = 0;
    if (j->partitioned) {
      bad = ts_interp_compare_outputs(j->m, want[0], got, j->root_sv, j->douts, W, f->tolerance, &st);
    } else {
      ts_sharding_value_t *rep;
      TS_CHECK_GOTO(ts_sharding_simple(j->m->arena, TS_SHARD_REPLICATED, &rep), st, done);
      for (int d = 0; d < W && st == TS_OK; d++) {
        if (W > 1) printf("device %d:\n", d);
        bad += ts_interp_compare_outputs(j->m, want[d], j->douts[d], rep, &j->douts[d], 1, f->tolerance, &st);
      }
    }
    if (st != TS_OK) goto done;
    if (bad) {
      printf("check: MISMATCH in %d output%s\n", bad, bad == 1 ? "" : "s");
      st = TS_ERR_CHECK_FAILED;
    } else {
      printf("check: match (%d devices, %lld step%s, tolerance %g)\n", W, (long long)f->steps,
             f->steps == 1 ? "" : "s", f->tolerance);
    }
  }
done:
  fflush(stdout);
  if (want)
    for (int d = 0; d < (j->partitioned ? 1 : W); d++) ts_value_unref(want[d]);
  ts_free(want);
  ts_value_unref(got);
  return st;
}

/* ---- setup -------------------------------------------------------------------- */

/* FNV-1a of the program's canonical text: equal programs, equal prints. */
static ts_status_t fingerprint(const ts_hlo_module_t *m, uint64_t *out) {
  ts_buf_t b = {0};
  ts_status_t st = ts_hlo_print(m, &b);
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t k = 0; st == TS_OK && k < b.len; k++) h = (h ^ (unsigned char)b.data[k]) * UINT64_C(0x100000001b3);
  ts_buf_free(&b);
  *out = h;
  return st;
}

/* The hang detector's rendezvous: rank 0 starts the coordinator (or takes
 * the one given) and every rank learns its address and the job's secret.
 * Collective over the world. A coordinator that cannot start leaves the
 * detector off (a warning), not the job. */
static ts_status_t hang_rendezvous(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  memset(&j->rv, 0, sizeof j->rv);
  if (j->first == 0 && f->hang) {
    if (f->hang_coordinator) {
      const char *secret = ts_env_get(TS_ENV_HANG_SECRET);
      if (!secret || !*secret) {
        ts_diag_plain(diag, "--hang-coordinator needs the job's secret in TESSERA_HANG_SECRET");
        return TS_ERR_INVALID_USAGE;
      }
      snprintf(j->rv.addr, sizeof j->rv.addr, "%s", f->hang_coordinator);
      snprintf(j->rv.secret, sizeof j->rv.secret, "%s", secret);
    } else {
      char secret[33];
      ts_hang_coord_opts_t co;
      ts_hang_coord_opts_default(&co);
      /* Every rank on this host (--slices only emulates several): loopback. Across hosts:
       * the address the ranks are told (this host's name), never every interface. */
      bool one_host = j->hosts <= 1 && j->env.mode != RUN_TCP;
      char listen[sizeof j->env.host + 4];
      snprintf(listen, sizeof listen, "%s:0", j->env.host);
      co.listen = one_host ? "127.0.0.1:0" : listen;
      co.world = j->env.ndevices;
      co.secret = secret;
      co.hang_timeout_s = f->hang_timeout;
      co.digest_path = f->hang_digest;
      co.abort_on_hang = f->abort_on_hang;
      co.checkpoint_dir = f->ckpt.dir ? f->ckpt.dir : f->ckpt.resume;
      co.quiet = true;
      ts_diag_t cd = {0};
      char addr[128];
      ts_status_t st = ts_hang_secret_generate(secret);
      if (st == TS_OK) st = ts_hang_coordinator_spawn(&co, NULL, addr, sizeof addr, &j->coordinator, &cd);
      if (st != TS_OK) {
        fprintf(stderr, "tessera run: warning: no hang detector: %s\n", cd.text ? cd.text : ts_status_string(st));
        j->coordinator = 0;
      } else if (one_host) {
        snprintf(j->rv.addr, sizeof j->rv.addr, "%s", addr);
      } else {
        const char *port = strrchr(addr, ':');
        snprintf(j->rv.addr, sizeof j->rv.addr, "%s%s", j->env.host, port ? port : ":0");
      }
      ts_diag_free(&cd);
      if (st == TS_OK) snprintf(j->rv.secret, sizeof j->rv.secret, "%s", secret);
    }
  }
  if (j->first == 0) {
    char id[33];
    if (ts_hang_secret_generate(id) == TS_OK) memcpy(j->rv.launch_id, id, 16);
  }
  if (j->env.mode != RUN_THREADS) {
    ts_coll_req_t *req;
    ts_hang_rendezvous_t got;
    TS_CHECK(ts_coll_broadcast_post(j->comms[0], &j->rv, &got, sizeof got, TS_U8, 0, &req));
    TS_CHECK(ts_coll_wait(req, -1));
    j->rv = got;
    j->rv.addr[sizeof j->rv.addr - 1] = 0;
    j->rv.secret[sizeof j->rv.secret - 1] = 0;
  }
  /* One launch, one id: random, of its own (rank 0's). */
  j->rv.launch_id[sizeof j->rv.launch_id - 1] = 0;
  j->launch_id = strtoull(j->rv.launch_id, NULL, 16);
  for (int l = 0; l < j->nlocal; l++) {
    ts_hang_progress_t *p = &j->progress[l];
    ts_hang_identity_fill(p, j->m->name ? j->m->name : "", j->fingerprint, j->launch_id, j->first + l,
                          j->env.ndevices);
    ts_hang_fault_identity(&j->fault, p);
  }
  return TS_OK;
}

/* Reads the module, picks the partition count, partitions. */
static ts_status_t prepare(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  ts_hlo_verify_opts_t vopts = {.replica_count = f->replicas, .num_partitions = f->partitions};
  /* --reference --devices N without counts: the devices the header's
   * replicas leave are partitions (verified once the header is read) */
  bool defer = f->reference && f->devices > 1 && !f->partitions && !f->replicas;
  ts_pipeline_init(&j->pipe, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_RUN, .path = f->path, .verify = vopts});
  TS_CHECK(ts_pipeline_run_to(&j->pipe, defer ? TS_STAGE_PARSED : TS_STAGE_VERIFIED, diag));
  j->m = j->pipe.m;
  ts_hlo_module_t *m = j->m;
  if (defer) {
    int64_t rc = m->replica_count > 0 ? m->replica_count : 1;
    j->pipe.o.verify.num_partitions = m->num_partitions > 1 ? m->num_partitions : f->devices / rc > 1 ? f->devices / rc : 1;
    TS_CHECK(ts_pipeline_run_to(&j->pipe, TS_STAGE_VERIFIED, diag));
  }
  bool any;
  int64_t named = sharding_devices(m, &any);
  j->R = f->replicas ? f->replicas : m->replica_count > 0 ? m->replica_count : 1;
  j->P = f->partitions ? f->partitions
         : m->num_partitions > 1 ? m->num_partitions
         : named > 1 ? named
                     : j->env.ndevices / j->R;
  if (j->P < 1) j->P = 1;
  j->np = m->entry->nparams;
  j->nleaves = shape_leaves(m->entry->root->shape);
  j->is_weight = ts_calloc((size_t)j->np + 1, sizeof *j->is_weight);
  j->out_param = ts_calloc((size_t)j->nleaves + 1, sizeof *j->out_param);
  j->param_sv = ts_calloc((size_t)j->np + 1, sizeof *j->param_sv);
  j->init = ts_calloc((size_t)j->np + 1, sizeof *j->init);
  if (!j->is_weight || !j->out_param || !j->param_sv || !j->init) return TS_ERR_NOMEM;
  alias_map(m, j->out_param, j->nleaves);
  for (int k = 0; k < j->nleaves; k++)
    if (j->out_param[k] >= 0) j->is_weight[j->out_param[k]] = true;
  j->inputs = (ts_interp_inputs_t){.m = m, .dir = f->inputs, .seed = f->seed, .is_weight = j->is_weight,
                             .init_weights = f->loop};
  return TS_OK;
}

/* The latency-hiding scheduler on the per-device program: collectives become
 * start/done pairs placed around independent compute. */
static ts_status_t schedule(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  ts_costmodel_t *cm = NULL;
  TS_CHECK(ts_costmodel_parse_spec(f->cost_model, f->cost_preset ? f->cost_preset : "host", &cm, diag));
  /* the host's cores are shared by the devices that run on it */
  int per_host = j->env.mode == RUN_THREADS ? j->env.ndevices : j->env.local_size;
  ts_costmodel_share_host(cm, run_host_cores(), per_host > 0 ? per_host : 1);
  j->pipe.o.sched = f->sched;
  j->pipe.o.sched.cost = cm;
  ts_status_t st = ts_pipeline_run_to(&j->pipe, TS_STAGE_SCHEDULED, diag);
  j->pipe.o.sched.cost = NULL;
  ts_costmodel_destroy(cm);
  j->sched = j->pipe.sched;
  return st;
}

static ts_status_t partition(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  ts_hlo_module_t *m = j->m;
  bool any;
  sharding_devices(m, &any);
  if (j->R * j->P != j->env.ndevices && !f->compile_only) {
    ts_diag_plain(diag, "the module runs on %lld devices (num_partitions=%lld x replica_count=%lld) but the job has "
                  "%d; launch %lld (mpirun -np %lld, or --devices %lld) or set --num-partitions",
                  (long long)(j->R * j->P), (long long)j->P, (long long)j->R, j->env.ndevices,
                  (long long)(j->R * j->P), (long long)(j->R * j->P), (long long)(j->R * j->P));
    return TS_ERR_INVALID_USAGE;
  }
  /* A per-device dump (entry *_spmd, or --no-partition) runs as written. */
  j->partitioned = any && j->P > 1 && !f->no_partition && !ts_partition_is_per_device(m);
  j->pipe.o.program = (ts_rt_program_opts_t){.replica_count = j->R, .num_partitions = j->P};
  if (j->partitioned) {
    j->pipe.o.partition = f->popts;
    j->pipe.o.partition.num_partitions = j->P;
    j->pipe.o.runnable_first = true;
    TS_CHECK(ts_pipeline_run_to(&j->pipe, TS_STAGE_PARTITIONED, diag));
    j->pm = j->pipe.pm;
    for (int p = 0; p < j->np; p++)
      if (sharding_of(m, m->entry->params[p], &j->param_sv[p]) != TS_OK) {
        ts_diag_plain(diag, "the sharding of parameter %d does not fit its shape", p);
        return TS_ERR_INVALID_ARGUMENT;
      }
    if (sharding_of(m, m->entry->root, &j->root_sv) != TS_OK) {
      ts_diag_plain(diag, "the sharding of the root does not fit its shape");
      return TS_ERR_INVALID_ARGUMENT;
    }
    /* a compile that only reports on the per-device program needs the input
     * no further (its parameters' shardings above live in the job) */
    if (f->compile_only) {
      ts_pipeline_release_input(&j->pipe);
      j->m = m = NULL;
      j->inputs.m = NULL;
    }
  } else {
    ts_pipeline_skip(&j->pipe, TS_STAGE_PARTITIONED);
    j->pm = m;
  }
  /* A module that says it is scheduled keeps its order; so does one device,
   * which has nothing to overlap. */
  const ts_hlo_attr_t *sa = ts_hlo_module_attr(j->pm, "is_scheduled");
  bool scheduled = sa && sa->kind == TS_ATTR_BOOL && sa->v.b;
  if (f->schedule && !scheduled && j->R * j->P > 1) TS_CHECK(schedule(j, diag));
  else ts_pipeline_skip(&j->pipe, TS_STAGE_SCHEDULED);
  if (f->compiled)
    TS_CHECK(run_compiled_kernels(j->pm, j->R, j->P, f->compile_only, f->kernel_cache, &j->pipe.o.program, &j->cg, diag));
  TS_CHECK(ts_pipeline_run_to(&j->pipe, TS_STAGE_ASSIGNED, diag));
  j->prog = j->pipe.prog;
  /* the hang detector's identity of the program: a run's, not a compile's */
  if (!f->compile_only) TS_CHECK(fingerprint(j->pm, &j->fingerprint));
  j->first_leaf = ts_calloc((size_t)j->np + 1, sizeof *j->first_leaf);
  if (!j->first_leaf) return TS_ERR_NOMEM;
  for (int p = 0; p < j->np; p++) j->first_leaf[p] = -1;
  for (int i = ts_rt_program_ninputs(j->prog) - 1; i >= 0; i--) j->first_leaf[ts_rt_program_input_param(j->prog, i)] = i;
  return TS_OK;
}

static void print_compile_only(job_t *j) {
  ts_rt_memory_t mem;
  ts_rt_program_memory(j->prog, &mem);
  int ninstr = 0;
  for (int c = 0; c < j->pm->ncomps; c++) ninstr += j->pm->comps[c]->ninstrs;
  printf("%s: %s for %lld devices (%lld replica%s x %lld partitions): %d instructions in %d computations\n",
         j->f->path, j->partitioned ? "partitioned" : "per-device program", (long long)(j->R * j->P),
         (long long)j->R, j->R == 1 ? "" : "s", (long long)j->P, ninstr, j->pm->ncomps);
  const struct {
    const char *label;
    uint64_t bytes;
  } parts[] = {
      {"per-device memory (buffer assignment): peak ", mem.peak},
      {" = inputs ", mem.inputs},
      {" + outputs ", mem.outputs},
      {" + temporaries ", mem.temps},
      {"; constants ", mem.constants},
      {"; without buffer reuse ", mem.naive},
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    printf("%s", parts[i].label);
    ts_interp_print_bytes(stdout, parts[i].bytes);
  }
  printf("\n");
  ts_interp_coll_stats_t cs;
  ts_interp_count_collectives(j->pm, &cs);
  ts_interp_print_collectives(&cs);
  if (j->sched) {
    const ts_sched_result_t *r = j->sched;
    printf("schedule (%s%s%s cost model): predicted step %.3f ms, collectives %.3f ms of which %.3f ms exposed "
           "(overlap %.1f%%), %d collectives made asynchronous\n",
           j->f->cost_preset ? j->f->cost_preset : "host", j->f->cost_model ? " + " : "",
           j->f->cost_model ? j->f->cost_model : "", r->step_time_s * 1e3, r->collective_s * 1e3,
           r->wasted_s * 1e3, 100 * r->overlap, r->converted);
  }
  fflush(stdout);
}

/* The world: one communicator per local device. */
static ts_status_t make_world(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  j->nlocal = j->env.mode == RUN_THREADS ? j->env.ndevices : 1;
  j->first = j->env.mode == RUN_THREADS ? 0 : j->env.rank;
  j->comms = ts_calloc((size_t)j->nlocal + 1, sizeof *j->comms);
  if (!j->comms) return TS_ERR_NOMEM;
  ts_status_t st = TS_OK;
  switch (j->env.mode) {
  case RUN_THREADS: st = ts_coll_comm_create_threads(j->nlocal, j->comms); break;
  case RUN_MPI:
    st = ts_coll_comm_create_mpi(f->backend, &j->comms[0]);
    if (st != TS_OK) ts_diag_plain(diag, "cannot create the %s world: %s", ts_coll_backend_name(f->backend), ts_status_string(st));
    break;
  case RUN_TCP:
    st = ts_coll_comm_create_tcp(f->address, j->env.rank, j->env.size, TS_COLL_BACKEND_UCX, f->timeout, &j->comms[0]);
    if (st != TS_OK) ts_diag_plain(diag, "no world at %s within %.0f s: %s", f->address, f->timeout, ts_status_string(st));
    break;
  }
  if (st != TS_OK) return st;
  for (int l = 0; l < j->nlocal; l++) ts_coll_comm_set_timeout(j->comms[l], f->timeout);
  /* Slices: hosts by default. */
  int hosts = 1;
  if (j->env.mode != RUN_THREADS) TS_CHECK(run_count_hosts(j->comms[0], j->env.host, &hosts));
  j->hosts = hosts;
  j->slices = f->slices ? (int)f->slices : hosts;
  if (j->env.ndevices % j->slices != 0) {
    ts_diag_plain(diag, "--slices %d does not divide the %d devices", j->slices, j->env.ndevices);
    return TS_ERR_INVALID_USAGE;
  }
  return TS_OK;
}

static ts_status_t run_job(job_t *j, ts_diag_t *diag) {
  const run_flags_t *f = j->f;
  TS_CHECK(make_world(j, diag));
  int W = j->env.ndevices;
  /* Cores: each device on this host gets its share, BLAS included (bound
   * or not: the devices' threads together never outnumber the cores). */
  int per_host = j->env.mode == RUN_THREADS ? j->nlocal : j->env.local_size;
  int cores = run_core_share(per_host);
  if (f->bind && j->env.mode != RUN_THREADS) cores = run_bind(j->env.local_rank, per_host, true);
  ts_kernels_set_blas_threads(cores);
  TS_LOG_INFO("blas: %d OpenBLAS thread%s per device (%d cores for %d device%s on this host)", cores,
              cores == 1 ? "" : "s", run_host_cores(), per_host, per_host == 1 ? "" : "s");
  j->status = ts_calloc((size_t)j->nlocal, sizeof *j->status);
  j->diags = ts_calloc((size_t)j->nlocal, sizeof *j->diags);
  j->progress = ts_calloc((size_t)j->nlocal, sizeof *j->progress);
  bool rank0 = j->first == 0;
  if (rank0) {
    j->douts = ts_calloc((size_t)W, sizeof *j->douts);
    j->events = ts_calloc((size_t)W, sizeof *j->events);
    j->nevents = ts_calloc((size_t)W, sizeof *j->nevents);
    j->step_ms = ts_calloc((size_t)f->steps, sizeof *j->step_ms);
    j->loss = ts_calloc((size_t)f->steps, sizeof *j->loss);
  }
  if (!j->status || !j->diags || !j->progress ||
      (rank0 && (!j->douts || !j->events || !j->nevents || !j->step_ms || !j->loss)))
    return TS_ERR_NOMEM;
  TS_CHECK(hang_rendezvous(j, diag));
  if (f->steps > 1) {
    bool any_data = false;
    for (int p = 0; p < j->np; p++) any_data |= !j->is_weight[p];
    int64_t from = j->start_step > 2 ? j->start_step : 2; /* resumed: the checkpoint's next step */
    if (any_data) TS_CHECK(ts_interp_feeder_start(&j->inputs, from, f->steps, 2, j->nlocal, &j->feeder));
  }
  if (j->env.mode == RUN_THREADS) {
    pthread_t *th = ts_calloc((size_t)j->nlocal, sizeof *th);
    worker_t *w = ts_calloc((size_t)j->nlocal, sizeof *w);
    if (!th || !w) {
      ts_free(th);
      ts_free(w);
      return TS_ERR_NOMEM;
    }
    int started = 0;
    for (; started < j->nlocal; started++) {
      w[started] = (worker_t){j, started};
      if (pthread_create(&th[started], NULL, worker_main, &w[started]) != 0) break;
    }
    if (started < j->nlocal) ts_coll_comm_abort(j->comms[0], TS_ERR_SYSTEM);
    for (int l = 0; l < started; l++) pthread_join(th[l], NULL);
    for (int l = started; l < j->nlocal; l++) j->status[l] = TS_ERR_SYSTEM;
    ts_free(th);
    ts_free(w);
  } else {
    j->status[0] = device_work(j, 0, &j->diags[0]);
  }
  /* The first real error (a peer's abort is only its echo). */
  ts_status_t st = TS_OK;
  int who = -1;
  for (int l = 0; l < j->nlocal; l++)
    if (j->status[l] != TS_OK && (st == TS_OK || (st == TS_ERR_REMOTE && j->status[l] != TS_ERR_REMOTE))) {
      st = j->status[l];
      who = l;
    }
  if (st != TS_OK) {
    if (st != TS_ERR_REMOTE || j->env.mode == RUN_THREADS) {
      const char *why = j->diags[who].text;
      ts_diag_plain(diag, "rank %d: %s", j->first + who, why && *why ? why : ts_status_string(st));
    } else {
      ts_diag_plain(diag, "rank %d: stopped: another rank failed", j->first + who);
    }
    return st;
  }
  if (rank0) return finish_rank0(j, diag);
  return TS_OK;
}

static void job_free(job_t *j) {
  ts_interp_feeder_stop(j->feeder);
  int W = j->env.ndevices;
  if (j->douts)
    for (int w = 0; w < W; w++) ts_value_unref(j->douts[w]);
  if (j->events)
    for (int w = 0; w < W; w++) ts_free(j->events[w]);
  ts_free(j->douts);
  ts_free(j->events);
  ts_free(j->nevents);
  ts_free(j->step_ms);
  ts_free(j->loss);
  if (j->diags)
    for (int l = 0; l < j->nlocal; l++) ts_diag_free(&j->diags[l]);
  ts_free(j->diags);
  ts_free(j->status);
  ts_free(j->progress);
  if (j->comms)
    for (int l = 0; l < j->nlocal; l++) ts_coll_comm_destroy(j->comms[l]);
  ts_free(j->comms);
  ts_ckpt_destroy(j->ckpt);
  if (j->init)
    for (int p = 0; p < j->np; p++) ts_value_unref(j->init[p]);
  ts_free(j->init);
  ts_free(j->first_leaf);
  ts_free(j->is_weight);
  ts_free(j->out_param);
  ts_free(j->param_sv);
  ts_pipeline_fini(&j->pipe);
  ts_codegen_destroy(j->cg); /* after the program that runs its kernels */
}

/* ---- flags -------------------------------------------------------------------- */

static bool parse_task_id(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0) {
    fprintf(stderr, "tessera run: error: --task_id wants a non-negative integer, got '%s'\n", s);
    return false;
  }
  *out = v;
  return true;
}

enum {
  OPT_STEPS = 0x200, OPT_LOOP, OPT_CHECK, OPT_TOL, OPT_COMPILE_ONLY, OPT_TRACE, OPT_SLICES, OPT_BACKEND,
  OPT_TIMEOUT, OPT_NO_BIND, OPT_REFERENCE, OPT_TASK, OPT_NODES, OPT_ADDRESS,
  OPT_HANG_TIMEOUT, OPT_HANG_DIGEST, OPT_ABORT_ON_HANG, OPT_HANG_COORD, OPT_NO_HANG,
  OPT_NO_SCHEDULE, OPT_NO_PARTITION, OPT_KERNELS,
  OPT_PLATFORM, OPT_NO_KERNEL_CACHE,
};

/* Parses argv into f; returns -1 to go on, else the exit code. */
static int parse_flags(int argc, char **argv, run_flags_t *f) {
  static const struct option opts[] = {
      {"devices", required_argument, NULL, 'd'},
      {"inputs", required_argument, NULL, 'i'},
      {"random-inputs", required_argument, NULL, 'r'},
      {"outputs", required_argument, NULL, 'o'},
      {"num-partitions", required_argument, NULL, 'p'},
      {"replica-count", required_argument, NULL, 'R'},
      {"trap-nonfinite", no_argument, NULL, 'T'},
      {"steps", required_argument, NULL, OPT_STEPS},
      {"loop", no_argument, NULL, OPT_LOOP},
      {"check", no_argument, NULL, OPT_CHECK},
      {"tolerance", required_argument, NULL, OPT_TOL},
      {"compile-only", no_argument, NULL, OPT_COMPILE_ONLY},
      {"no-partition", no_argument, NULL, OPT_NO_PARTITION},
      {"trace", required_argument, NULL, OPT_TRACE},
      {"slices", required_argument, NULL, OPT_SLICES},
      {"backend", required_argument, NULL, OPT_BACKEND},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"no-bind", no_argument, NULL, OPT_NO_BIND},
      {"reference", no_argument, NULL, OPT_REFERENCE},
      {"kernels", required_argument, NULL, OPT_KERNELS},
      {"no-kernel-cache", no_argument, NULL, OPT_NO_KERNEL_CACHE},
      {"platform", required_argument, NULL, OPT_PLATFORM},
      {"task_id", required_argument, NULL, OPT_TASK},
      {"num_nodes", required_argument, NULL, OPT_NODES},
      {"address", required_argument, NULL, OPT_ADDRESS},
      {"hang-timeout", required_argument, NULL, OPT_HANG_TIMEOUT},
      {"hang-digest", required_argument, NULL, OPT_HANG_DIGEST},
      {"abort-on-hang", optional_argument, NULL, OPT_ABORT_ON_HANG},
      {"hang-coordinator", required_argument, NULL, OPT_HANG_COORD},
      {"no-hang-detector", no_argument, NULL, OPT_NO_HANG},
      {"no-schedule", no_argument, NULL, OPT_NO_SCHEDULE},
      {"help", no_argument, NULL, 'h'},
      TS_SCHED_FLAG_OPTIONS,
      TS_PARTITION_FLAG_OPTIONS,
      TS_CKPT_FLAG_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  *f = (run_flags_t){.steps = 1, .task_id = -1, .tolerance = 1e-4, .bind = true,
                     .backend = TS_COLL_BACKEND_MPI, .hang = true, .abort_on_hang = true, .hang_timeout = 60,
                     .schedule = true, .compiled = true, .kernel_cache = true};
  ts_partition_opts_default(&f->popts);
  ts_sched_opts_default(&f->sched);
  ts_ckpt_flags_default(&f->ckpt);
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'd': if (!ts_cli_parse_count("run", "--devices", optarg, &f->devices)) return 2; break;
    case 'i': f->inputs = optarg; break;
    case 'r': if (!ts_cli_parse_seed("run", optarg, &f->seed)) return 2; f->seeded = true; break;
    case 'o': f->outputs = optarg; break;
    case 'p': if (!ts_cli_parse_count("run", "--num-partitions", optarg, &f->partitions)) return 2; break;
    case 'R': if (!ts_cli_parse_count("run", "--replica-count", optarg, &f->replicas)) return 2; break;
    case 'T': f->trap = true; break;
    case OPT_STEPS: if (!ts_cli_parse_count("run", "--steps", optarg, &f->steps)) return 2; break;
    case OPT_LOOP: f->loop = true; break;
    case OPT_CHECK: f->check = true; break;
    case OPT_TOL: if (!ts_cli_parse_positive("run", "--tolerance", optarg, &f->tolerance)) return 2; break;
    case OPT_COMPILE_ONLY: f->compile_only = true; break;
    case OPT_NO_PARTITION: f->no_partition = true; break;
    case OPT_TRACE: f->trace = optarg; break;
    case OPT_SLICES: if (!ts_cli_parse_count("run", "--slices", optarg, &f->slices)) return 2; break;
    case OPT_BACKEND:
      if (!ts_coll_backend_from_name(optarg, &f->backend) ||
          (f->backend != TS_COLL_BACKEND_MPI && f->backend != TS_COLL_BACKEND_UCX)) {
        fprintf(stderr, "tessera run: error: --backend wants mpi or ucx, got '%s'\n", optarg);
        return 2;
      }
      break;
    case OPT_TIMEOUT: if (!ts_cli_parse_positive("run", "--timeout", optarg, &f->timeout)) return 2; break;
    case OPT_NO_BIND: f->bind = false; break;
    case OPT_REFERENCE: f->reference = true; break;
    case OPT_KERNELS:
      if (strcmp(optarg, "compiled") != 0 && strcmp(optarg, "interp") != 0) {
        fprintf(stderr, "tessera run: error: --kernels wants compiled or interp, got '%s'\n", optarg);
        return 2;
      }
      f->compiled = strcmp(optarg, "compiled") == 0;
      break;
    case OPT_NO_KERNEL_CACHE: f->kernel_cache = false; break;
    case OPT_PLATFORM: if (!ts_cli_parse_platform("run", optarg, &f->platform)) return 2; break;
    case OPT_TASK: if (!parse_task_id(optarg, &f->task_id)) return 2; break;
    case OPT_NODES: if (!ts_cli_parse_count("run", "--num_nodes", optarg, &f->num_nodes)) return 2; break;
    case OPT_ADDRESS: f->address = optarg; break;
    case OPT_HANG_TIMEOUT: if (!ts_cli_parse_positive("run", "--hang-timeout", optarg, &f->hang_timeout)) return 2; break;
    case OPT_HANG_DIGEST: f->hang_digest = optarg; break;
    case OPT_ABORT_ON_HANG:
      if (!optarg || strcmp(optarg, "true") == 0) f->abort_on_hang = true;
      else if (strcmp(optarg, "false") == 0) f->abort_on_hang = false;
      else {
        fprintf(stderr, "tessera run: error: --abort-on-hang takes true or false, got '%s'\n", optarg);
        return 2;
      }
      break;
    case OPT_HANG_COORD: f->hang_coordinator = optarg; break;
    case OPT_NO_HANG: f->hang = false; break;
    case OPT_NO_SCHEDULE: f->schedule = false; break;
    case TS_SFLAG_COST_MODEL: f->cost_model = optarg; break;
    case TS_SFLAG_PRESET: f->cost_preset = optarg; break;
    case TS_SFLAG_OVERLAP:
    case TS_SFLAG_MEMORY: if (!ts_sched_flag_parse("run", c, optarg, &f->sched)) return 2; break;
    case 'h': usage(stdout); return 0;
    case ':':
    case '?': return ts_cli_getopt_error("run", c, argv[optind - 1], usage);
    default:
      if (ts_ckpt_flag_is(c)) {
        if (!ts_ckpt_flag_parse("run", c, optarg, &f->ckpt)) return 2;
      } else if (!ts_partition_flag_parse("run", c, optarg, &f->popts)) {
        return 2;
      }
      break;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera run: error: %s\n", optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    return 2;
  }
  f->path = argv[optind];
  if (f->inputs && f->seeded) {
    fprintf(stderr, "tessera run: error: --inputs and --random-inputs exclude each other\n");
    return 2;
  }
  if (f->devices > 1024) {
    fprintf(stderr, "tessera run: error: --devices %lld: one process runs at most 1024 devices\n", (long long)f->devices);
    return 2;
  }
  /* --timeout wins; without it, TESSERA_COLL_TIMEOUT (as every communicator
   * reads it), else 300 s. */
  if (f->timeout == 0) f->timeout = ts_env_positive(TS_ENV_COLL_TIMEOUT, 300);
  if (f->reference && f->platform == TS_PLATFORM_GPU) {
    fprintf(stderr, "tessera run: error: --reference runs the interpreter on the CPU, not with --platform=gpu\n");
    return 2;
  }
  return ts_cli_platform("run", f->platform, &f->platform, &f->gpus);
}

static void report(ts_status_t st, ts_diag_t *diag) {
  if (st >= 0 || (st == TS_ERR_CHECK_FAILED && !diag->text)) return;
  if (diag->text) {
    const char *t = diag->text;
    if (strncmp(t, "error: ", 7) == 0) fprintf(stderr, "tessera run: %s", t);
    else if (strncmp(t, "rank ", 5) == 0) fprintf(stderr, "tessera run: %s", t);
    else fputs(t, stderr);
    if (t[0] && t[strlen(t) - 1] != '\n') fputc('\n', stderr);
  } else {
    fprintf(stderr, "tessera run: error: %s\n", ts_status_string(st));
  }
  fflush(stderr);
}

int ts_cmd_run(int argc, char **argv) {
  run_flags_t f;
  int rc = parse_flags(argc, argv, &f);
  if (rc >= 0) return rc;
  if (f.platform == TS_PLATFORM_GPU) { /* the flag and the device are checked; the executor is not here yet */
    fprintf(stderr, "tessera run: error: --platform=gpu: %d CUDA device(s) found, but this build cannot run modules "
            "on them yet\n", f.gpus);
    return 3;
  }
  ts_diag_t diag = {0};
  job_t j = {.f = &f, .start_step = 1};
  bool mpi = false;
  ts_status_t st;
  TS_CHECK_GOTO(ts_hang_fault_parse(ts_env_get(TS_ENV_FAULT), &j.fault, &diag), st, done);
  TS_CHECK_GOTO(run_env_detect(f.devices, f.task_id, f.num_nodes, f.address, f.compile_only, &j.env, &diag), st, done);
  /* Every output target before any compute: a run must not lose its result at the end. */
  if (!f.compile_only && j.env.rank == 0 &&
      ((st = ts_interp_check_outputs(f.outputs, &diag)) != TS_OK || (st = ts_file_check_writable(f.trace, &diag)) != TS_OK ||
       (st = ts_file_check_writable(f.hang_digest, &diag)) != TS_OK))
    goto done;
  TS_CHECK_GOTO(prepare(&j, &diag), st, done);
  bool reference = f.reference || (j.env.mode == RUN_THREADS && j.env.ndevices == 1 && j.R * j.P > 1 && !f.compile_only);
  /* Step 1's inputs (everything after is the feeder's, or the loop's). */
  if (!f.compile_only)
    for (int p = 0; p < j.np; p++) TS_CHECK_GOTO(ts_interp_param_value(&j.inputs, p, 1, &j.init[p], &diag), st, done);
  if (reference && ts_ckpt_flags_any(&f.ckpt)) {
    ts_diag_plain(&diag, "--checkpoint-dir and --resume need the runtime (not --reference, nor --devices 1 on a "
                  "module written for several devices)");
    st = TS_ERR_INVALID_USAGE;
    goto done;
  }
  if (reference) {
    st = run_reference_mode(&j, &diag);
    goto done;
  }
  TS_CHECK_GOTO(partition(&j, &diag), st, done);
  if (f.compile_only) {
    if (j.env.rank == 0) print_compile_only(&j);
    st = TS_OK;
    goto done;
  }
  /* ---- checkpoint: what to resume from, the writer ---- */
  if (ts_ckpt_flags_any(&f.ckpt) || f.ckpt.every) {
    ts_ckpt_opts_t co = {.m = j.m, .is_weight = j.is_weight, .param_sv = j.partitioned ? j.param_sv : NULL,
                         .partitions = j.P, .ndevices = j.env.ndevices,
                         .first = j.env.mode == RUN_THREADS ? 0 : j.env.rank,
                         .nlocal = j.env.mode == RUN_THREADS ? j.env.ndevices : 1, .loop = f.loop, .steps = f.steps,
                         .flags = f.ckpt, .seed = f.seed, .seeded = f.seeded, .inputs_dir = f.inputs,
                         .quiet = j.env.rank != 0, .timeout_s = f.timeout};
    TS_CHECK_GOTO(ts_ckpt_create(&co, &j.ckpt, &diag), st, done);
    j.start_step = ts_ckpt_first_step(j.ckpt);
    j.inputs.seed = ts_ckpt_seed(j.ckpt, j.inputs.seed);
  }
  /* ---- */
  if (j.env.mode == RUN_MPI) {
    if ((st = ts_coll_mpi_init(&argc, &argv)) != TS_OK) {
      ts_diag_plain(&diag, "cannot start MPI: %s", st == TS_ERR_UNSUPPORTED ? "this build has no MPI" : ts_status_string(st));
      goto done;
    }
    mpi = true;
  }
  st = run_job(&j, &diag);
done:
  report(st, &diag);
  fflush(stdout);
  /* The coordinator leaves by itself once every rank said goodbye or after
   * its digest; reap it (and kill it past the deadline: no orphans). A run
   * that failed while watched is what the digest is for: the coordinator's
   * gather alone may take its whole timeout (2 s), so it gets as long as a
   * clean exit (an abort implies a connected worker); 2 s only when no
   * worker of this process ever connected. */
  if (j.coordinator > 0)
    ts_hang_coordinator_wait(j.coordinator, st == TS_OK || atomic_load(&j.hang_watched) ? 15 : 2, NULL);
  if (mpi && st != TS_OK && st != TS_ERR_CHECK_FAILED) {
    /* A failed world: MPI_Finalize could wait for ranks that are gone.
     * Leave now; mpirun sees the non-zero exit and stops the job. */
    _exit(ts_pipeline_exit_code(st));
  }
  job_free(&j);
  ts_interp_release_buffers();
  ts_diag_free(&diag);
  if (mpi) ts_coll_mpi_finalize();
  return ts_pipeline_exit_code(st);
}
