/* tessera run: where the ranks come from (mpirun, srun, flags, --devices),
 * which cores they get (hwloc), and how many hosts the job spans. */
#include "run_internal.h"

#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An environment variable as a non-negative int; -1 when unset or not one. */
static int env_int(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 1 << 24) return -1;
  return (int)v;
}

ts_status_t run_env_detect(int64_t devices, int64_t task_id, int64_t num_nodes, const char *address,
                           bool compile_only, run_env_t *env, ts_diag_t *diag) {
  memset(env, 0, sizeof *env);
  if (gethostname(env->host, sizeof env->host - 1) != 0) strcpy(env->host, "localhost");
  int ompi_size = env_int("OMPI_COMM_WORLD_SIZE"), slurm_size = env_int("SLURM_NTASKS");
  int pmix_rank = env_int("PMIX_RANK");
  bool under_mpi = ompi_size > 0 || (env_int("SLURM_PROCID") >= 0 && slurm_size > 0 && env_int("SLURM_STEP_ID") >= 0) ||
                   pmix_rank >= 0;
  if (devices > 0 && under_mpi && (ompi_size > 1 || slurm_size > 1)) {
    ts_diag_plain(diag, "--devices runs every device in one process; under mpirun/srun drop it (each rank is a "
                  "device)");
    return TS_ERR_INVALID_USAGE;
  }
  if (task_id >= 0 || num_nodes > 0 || address) {
    if (task_id < 0 || num_nodes <= 0 || !address) {
      ts_diag_plain(diag, "--task_id, --num_nodes and --address go together (as XLA's multi-host runner takes "
                    "them)");
      return TS_ERR_INVALID_USAGE;
    }
    if (task_id >= num_nodes) {
      ts_diag_plain(diag, "--task_id %lld is not below --num_nodes %lld", (long long)task_id, (long long)num_nodes);
      return TS_ERR_INVALID_USAGE;
    }
    if (devices > 0) {
      ts_diag_plain(diag, "--devices and --task_id exclude each other");
      return TS_ERR_INVALID_USAGE;
    }
    env->mode = RUN_TCP;
    env->rank = (int)task_id;
    env->size = env->ndevices = (int)num_nodes;
    env->local_rank = 0;
    env->local_size = 1;
    env->launcher = "flags";
    return TS_OK;
  }
  if (devices > 0) {
    env->mode = RUN_THREADS;
    env->rank = 0;
    env->size = 1;
    env->local_rank = 0;
    env->local_size = 1;
    env->ndevices = (int)devices;
    env->launcher = "--devices";
    return TS_OK;
  }
  if (ompi_size > 0) {
    env->mode = RUN_MPI;
    env->rank = env_int("OMPI_COMM_WORLD_RANK");
    env->size = ompi_size;
    env->local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
    env->local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
    env->launcher = "mpirun";
  } else if (under_mpi && slurm_size > 0) {
    env->mode = RUN_MPI;
    env->rank = env_int("SLURM_PROCID");
    env->size = slurm_size;
    env->local_rank = env_int("SLURM_LOCALID");
    /* SLURM_NTASKS_PER_NODE is only set when asked for; else assume the
     * tasks spread evenly over SLURM_NNODES. */
    env->local_size = env_int("SLURM_NTASKS_PER_NODE");
    int nodes = env_int("SLURM_NNODES");
    if (env->local_size <= 0 && nodes > 0) env->local_size = (slurm_size + nodes - 1) / nodes;
    env->launcher = "srun";
  } else if (pmix_rank >= 0) {
    env->mode = RUN_MPI;
    env->rank = pmix_rank;
    env->size = env_int("PMIX_SIZE");
    env->local_rank = env_int("PMIX_LOCAL_RANK");
    env->local_size = env_int("PMIX_LOCAL_SIZE");
    env->launcher = "pmix";
  } else if (compile_only) {
    /* Nothing runs: the device count comes from the module. */
    env->mode = RUN_THREADS;
    env->size = env->local_size = env->ndevices = 1;
    env->launcher = "--compile-only";
    return TS_OK;
  } else {
    ts_diag_plain(diag, "say how many devices with --devices N (N = 1 runs the reference interpreter), or launch "
                  "under mpirun/srun, or give --task_id, --num_nodes and --address");
    return TS_ERR_INVALID_USAGE;
  }
  if (env->rank < 0 || env->size <= 0 || env->rank >= env->size) {
    ts_diag_plain(diag, "the %s environment gives no valid rank and size (rank %d of %d)", env->launcher, env->rank,
                  env->size);
    return TS_ERR_INVALID_USAGE;
  }
  if (env->local_rank < 0) env->local_rank = 0;
  if (env->local_size <= 0) env->local_size = 1;
  env->ndevices = env->size;
  return TS_OK;
}

/* This host's topology, loaded once per process (a load takes ~10 ms and
 * every device thread binds itself) and kept for the process's life; hwloc
 * allows concurrent readers of a loaded topology. NULL when it cannot load.
 * With it, the cores this process may use: those its binding at the first
 * load touches (a taskset, mpirun's --bind-to, a cgroup), in the order of
 * the topology; device threads and ranks share these, never the others. */
static hwloc_topology_t host_topo;
static hwloc_obj_t *my_cores;
static int my_ncores;
static pthread_once_t host_topo_once = PTHREAD_ONCE_INIT;

static void load_host_topology(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return;
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return;
  }
  int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  my_cores = n > 0 ? ts_calloc((size_t)n, sizeof *my_cores) : NULL;
  if (bound && my_cores) {
    bool known = hwloc_get_cpubind(t, bound, HWLOC_CPUBIND_PROCESS) == 0;
    for (int c = 0; c < n; c++) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)c);
      if (core && core->cpuset && (!known || hwloc_bitmap_intersects(core->cpuset, bound)))
        my_cores[my_ncores++] = core;
    }
  }
  hwloc_bitmap_free(bound);
  host_topo = t;
}

static hwloc_topology_t topology(void) {
  pthread_once(&host_topo_once, load_host_topology);
  return host_topo;
}

int run_host_cores(void) {
  topology();
  return my_ncores > 0 ? my_ncores : 1;
}

int run_core_share(int nslots) {
  int per = run_host_cores() / (nslots > 0 ? nslots : 1);
  return per >= 1 ? per : 1;
}

int run_bind(int slot, int nslots, bool whole_process) {
  hwloc_topology_t topo = topology();
  int per = run_core_share(nslots);
  if (!topo || my_ncores / (nslots > 0 ? nslots : 1) < 1 || slot < 0 || slot >= nslots) return per;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return per;
  for (int c = slot * per; c < (slot + 1) * per; c++) hwloc_bitmap_or(set, set, my_cores[c]->cpuset);
  /* Best effort: a container may forbid binding; running unbound is fine. */
  (void)hwloc_set_cpubind(topo, set, whole_process ? HWLOC_CPUBIND_PROCESS : HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
  return per;
}

ts_status_t run_count_hosts(ts_coll_comm_t *world, const char *host, int *nhosts) {
  int n = ts_coll_comm_size(world);
  enum { W = 64 };
  char mine[W] = {0};
  strncpy(mine, host, W - 1);
  char *all = ts_malloc((size_t)n * W);
  if (!all) return TS_ERR_NOMEM;
  ts_coll_req_t *req;
  ts_status_t st = ts_coll_allgather_post(world, mine, all, W, TS_U8, &req);
  if (st == TS_OK) st = ts_coll_wait(req, -1);
  if (st != TS_OK) {
    ts_free(all);
    return st;
  }
  /* Hosts as runs of equal names; a name that reappears later, or runs of
   * unequal length, mean no slice structure: one slice. */
  int runs = 0, run_len = -1, len = 0;
  bool regular = true;
  for (int r = 0; r < n; r++) {
    bool same = r > 0 && memcmp(all + (size_t)r * W, all + (size_t)(r - 1) * W, W) == 0;
    if (same) {
      len++;
      continue;
    }
    for (int q = 0; q < r && regular; q++)
      if (memcmp(all + (size_t)r * W, all + (size_t)q * W, W) == 0) regular = false;
    if (r > 0) {
      if (run_len >= 0 && len != run_len) regular = false;
      run_len = len;
    }
    runs++;
    len = 1;
  }
  if (run_len >= 0 && len != run_len) regular = false;
  ts_free(all);
  *nhosts = regular ? runs : 1;
  return TS_OK;
}
